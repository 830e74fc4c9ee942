package main

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/aws"
	"github.com/linerate/linerate/infra/aws/awsfake"
	"github.com/linerate/linerate/infra/netns"
)

// fakeTiming makes the binary's aws provider quick against the fake (see
// aws.TestTimingEnv); it is refused with any endpoint but a loopback one.
const fakeTiming = "poll=2ms,lease=20m,renew=5m,ssh=1ms,running=2s,delete=2s,notfound=1s,backoff=5ms"

// fakeEnv gives the binary fake credentials and quick timings, and none
// of the caller's other AWS_ settings (see withoutAWSSettings).
func fakeEnv(t *testing.T, key string) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AWS_") {
			t.Setenv(k, "") // restored after the test
			os.Unsetenv(k)
		}
	}
	t.Setenv("AWS_ACCESS_KEY_ID", key)
	t.Setenv("AWS_SECRET_ACCESS_KEY", "fake-secret")
	t.Setenv("LINERATE_AWSFAKE_TIMING", fakeTiming)
}

// withoutAWSSettings is env without the AWS_ settings of whoever runs the
// tests (a profile, a region, a CA bundle): a binary against the local
// fake gets only the ones its test gives it. The fake speaks plain HTTP,
// yet an AWS_CA_BUNDLE such as the system's is parsed by every process the
// SDK starts in.
func withoutAWSSettings(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "AWS_") {
			out = append(out, kv)
		}
	}
	return out
}

// pairOnFake brings up a pair of campaign in this process with its own
// access key (so the fake tells its calls apart); its hosts are stand-ins
// that never connect anywhere. edit, when given, changes the config.
func pairOnFake(t *testing.T, f *awsfake.Fake, key, campaign string, edit func(*aws.Config)) *aws.Provider {
	t.Helper()
	cfg := aws.Config{
		Access: aws.Access{Region: "us-east-1", AccessKeyID: key, SecretAccessKey: "fake-secret",
			Endpoint: f.URL, MaxBackoff: 5 * time.Millisecond},
		InstanceType: "c7i.large", SSHFrom: netip.MustParsePrefix("203.0.113.7/32"),
		Poll: 2 * time.Millisecond, RunningTimeout: 2 * time.Second, DeleteTimeout: 2 * time.Second,
	}
	if edit != nil {
		edit(&cfg)
	}
	p, err := aws.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.WaitSSH = func(context.Context, string) error { return nil }
	p.Connect = func(_ context.Context, in aws.Instance, _, _ string) (infra.Host, error) {
		return &netns.Host{Label: in.ID, Addr: in.PrivateIP}, nil
	}
	if _, err := p.Up(context.Background(), infra.Spec{Campaign: campaign, Dir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	return p
}

// resourcesOf are the fake's live resources created with this access key.
func resourcesOf(f *awsfake.Fake, before map[string]bool) map[string]awsfake.Resource {
	out := map[string]awsfake.Resource{}
	for _, r := range f.Live() {
		if !before[r.ID] {
			out[r.ID] = r
		}
	}
	return out
}

func ids(rs []awsfake.Resource) map[string]bool {
	m := map[string]bool{}
	for _, r := range rs {
		m[r.ID] = true
	}
	return m
}

// `infra gc` decides by owner and lease, not by what the directory it runs
// in holds: a live pair of the same campaign, made by a coordinator on
// another machine an hour ago, is kept; a crashed owner's pair whose lease
// ran out is listed with its owner and lease age, then removed.
func TestInfraGCByLease(t *testing.T) {
	f := awsfake.New()
	defer f.Close()
	live := pairOnFake(t, f, "AKIDLIVEOWNER", "shared", nil)
	liveRes := resourcesOf(f, nil)
	crashed := pairOnFake(t, f, "AKIDCRASHEDOWNER", "shared", nil) // never taken down: its coordinator is gone
	crashedRes := resourcesOf(f, ids(mapValues(liveRes)))
	hourAgo := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	for id := range liveRes {
		f.Retag(id, map[string]string{aws.TagCreated: hourAgo})
	}
	var crashedOwner string
	for id, r := range crashedRes {
		f.Retag(id, map[string]string{aws.TagCreated: hourAgo, "linerate:lease": time.Now().Add(-7 * time.Minute).UTC().Format(time.RFC3339)})
		crashedOwner = r.Tags["linerate:owner"]
	}
	fakeEnv(t, "AKIDGC")
	code, stdout, stderr := linerateIn(t, t.TempDir(), "", "", "infra", "gc", "--provider", "aws", "--region", "us-east-1", "--access-keys-from-env", "--endpoint", f.URL)
	if code != 0 {
		t.Fatalf("gc: exit %d\n%s\n%s", code, stdout, stderr)
	}
	now := ids(f.Live())
	for id, r := range liveRes {
		if !now[id] {
			t.Errorf("gc removed the live owner's %s %s", r.Kind, id)
		}
	}
	for id, r := range crashedRes {
		if now[id] {
			t.Errorf("gc kept the crashed owner's %s %s", r.Kind, id)
		}
	}
	// It says what it removes and why before removing it.
	want := "owner " + crashedOwner
	i, j := strings.Index(stdout, want), strings.Index(stdout, "removed")
	if crashedOwner == "" || i < 0 || j < i || !strings.Contains(stdout[i:], "lease expired 7m") {
		t.Errorf("gc output does not list %q with its lease age before removing:\n%s", want, stdout)
	}
	if err := live.Down(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := crashed.Down(context.Background()); err != nil { // finds nothing; ends its renewal
		t.Fatal(err)
	}
	if n := len(f.Live()); n != 0 {
		t.Errorf("%d live after the live owner's Down", n)
	}
}

func mapValues(m map[string]awsfake.Resource) []awsfake.Resource {
	var out []awsfake.Resource
	for _, r := range m {
		out = append(out, r)
	}
	return out
}

// A session token from the environment goes with the keys.
func TestAccessKeysFromEnvWithSessionToken(t *testing.T) {
	f := awsfake.New()
	defer f.Close()
	fakeEnv(t, "ASIATEMPORARY")
	t.Setenv("AWS_SESSION_TOKEN", "session-token-of-the-day")
	code, stdout, stderr := linerate(t, "", "", "infra", "gc", "--provider", "aws", "--dry-run", "--region", "us-east-1", "--access-keys-from-env", "--endpoint", f.URL)
	if code != 0 {
		t.Fatalf("gc: exit %d\n%s\n%s", code, stdout, stderr)
	}
	calls := f.CallsBy()
	if len(calls) == 0 {
		t.Fatal("gc made no call")
	}
	for _, c := range calls {
		if c.Key != "ASIATEMPORARY" || c.Token != "session-token-of-the-day" {
			t.Errorf("%s signed by %q with token %q, want the temporary key and its token", c.Action, c.Key, c.Token)
		}
	}
}

// An up whose teardown failed keeps infra.json, so `infra down` can finish
// the job, which then removes the state and the created private key.
func TestInfraUpKeepsStateUntilTornDown(t *testing.T) {
	f := awsfake.New()
	defer f.Close()
	f.Faults.FailDelete = map[string]string{"security-group": "UnauthorizedOperation"}
	fakeEnv(t, "AKIDINFRAUP")
	dir := filepath.Join(t.TempDir(), "c")
	awsFlags := []string{"--campaign", "c", "--dir", dir, "--region", "us-east-1", "--access-keys-from-env", "--endpoint", f.URL}
	// Nothing answers SSH on the fake's addresses: up fails and tears down.
	code, stdout, stderr := linerate(t, "", "", append([]string{"infra", "up", "--provider", "aws", "--instance-type", "c7i.large",
		"--ssh-from", "203.0.113.7/32", "--hourly-usd", "1", "--yes", "--ssh-timeout", "1ms"}, awsFlags...)...)
	if code != 1 || !strings.Contains(stderr, "UnauthorizedOperation") {
		t.Fatalf("up: exit %d, want 1 with the failed teardown\n%s\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "infra.json")); err != nil {
		t.Fatalf("infra.json gone although the security group is still there: %v", err)
	}
	if len(f.Live()) == 0 {
		t.Fatal("the fault did not leave anything behind")
	}
	f.SetFaults(func(fl *awsfake.Faults) { fl.FailDelete = nil })
	code, stdout, stderr = linerate(t, "", "", append([]string{"infra", "down"}, awsFlags...)...)
	if code != 0 {
		t.Fatalf("down: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if live := f.Live(); len(live) != 0 {
		t.Errorf("%d live after down: %+v", len(live), live)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, l := range left {
		if strings.HasSuffix(l, ".pem") || strings.HasSuffix(l, "infra.json") {
			t.Errorf("%s left after down", l)
		}
	}
}

// awsCampaign writes an aws campaign file with the given provider extras
// and workload duration.
func awsCampaign(t *testing.T, extra, duration string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "aws.yaml")
	src := `name: cli-aws-check
provider: {kind: aws, instance-type: c8gn.16xlarge, region: us-east-1, hourly-usd: 3.5` + extra + `}
versions:
  - {image: "valkey/valkey:9.1.0"}
workload:
  value-size: 1MB
  duration: ` + duration + `
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// A plan longer than the dead-man shutdown would lose its hosts mid-run:
// refused before anything is launched, naming both figures (the plan's 40
// minutes of cells and the link's calibration before them: 41m).
func TestSweepRunRefusesPlanLongerThanDeadMan(t *testing.T) {
	fakeEnv(t, "AKIDDEADMAN")
	f := awsfake.New() // the preflight's; nothing is created
	defer f.Close()
	long := awsCampaign(t, ", ssh-from: 203.0.113.7/32, dead-man: 30m", "40m")
	run := filepath.Join(t.TempDir(), "run")
	code, _, stderr := linerate(t, "", "n\n", "sweep", "run", long, "--out", run,
		"--access-keys-from-env", "--aws-endpoint", "http://127.0.0.1:9")
	if code != 2 || !strings.Contains(stderr, "dead-man") || !strings.Contains(stderr, "30m") || !strings.Contains(stderr, "about 41m") {
		t.Errorf("exit %d, want 2 naming the estimate and the dead-man:\n%s", code, stderr)
	}
	if _, err := os.Stat(run); !os.IsNotExist(err) {
		t.Errorf("refused, but the run directory was made (%v)", err)
	}
	short := awsCampaign(t, ", ssh-from: 203.0.113.7/32, dead-man: 30m", "1m")
	code, _, stderr = linerate(t, "", "n\n", "sweep", "run", short, "--out", filepath.Join(t.TempDir(), "run"),
		"--access-keys-from-env", "--aws-endpoint", f.URL)
	if code != 1 || !strings.Contains(stderr, "not launched") {
		t.Errorf("a plan within the dead-man: exit %d, want the cost prompt's no:\n%s", code, stderr)
	}
}

// SSH from a range wider than /24 is refused, from the campaign or a flag,
// unless --ssh-from-wide says it is meant.
func TestSSHFromWideRefused(t *testing.T) {
	fakeEnv(t, "AKIDWIDE")
	f := awsfake.New() // the preflight's; nothing is created
	defer f.Close()
	wide := awsCampaign(t, ", ssh-from: 10.0.0.0/8", "1s")
	base := []string{"sweep", "run", wide, "--out", filepath.Join(t.TempDir(), "run"), "--access-keys-from-env", "--aws-endpoint", f.URL}
	for _, tc := range []struct {
		extra []string
		code  int
		want  string
	}{
		{nil, 2, "provider.ssh-from"},
		{[]string{"--ssh-from", "198.51.0.0/16"}, 2, "--ssh-from"},
		{[]string{"--ssh-from-wide"}, 1, "not launched"},
	} {
		code, _, stderr := linerate(t, "", "n\n", append(base, tc.extra...)...)
		if code != tc.code || !strings.Contains(stderr, tc.want) || (tc.code == 2 && !strings.Contains(stderr, "--ssh-from-wide")) {
			t.Errorf("%v: exit %d, want %d with %q:\n%s", tc.extra, code, tc.code, tc.want, stderr)
		}
	}
	code, _, stderr := linerate(t, "", "", "infra", "up", "--provider", "aws", "--campaign", "w", "--dir", t.TempDir(), "--instance-type", "c7i.large",
		"--region", "us-east-1", "--access-keys-from-env", "--endpoint", "http://127.0.0.1:9", "--ssh-from", "10.0.0.0/8", "--yes")
	if code != 2 || !strings.Contains(stderr, "--ssh-from-wide") {
		t.Errorf("infra up --ssh-from 10.0.0.0/8: exit %d:\n%s", code, stderr)
	}
}
