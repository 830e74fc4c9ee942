package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/infra/aws/awsfake"
	"github.com/linerate/linerate/infra/netns"
	"github.com/linerate/linerate/infra/sshhost/sshtest"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/sweeps"
)

// benchWindow is the measured window of the real benches and cells here
// whose test needs a request completed in it (exit 0, a cell done, ops
// or a figure in the record): make test was seen to freeze a process for
// 1-2.5 s, which a shorter window can lie wholly inside. Where what a
// run moves is not what its test judges, it is paced (--rate): closed
// loop, each such window took both CPUs from every other package.
const benchWindow = "3s"

// linerate runs the built binary with args, in the namespace ns when set,
// and returns its exit code and output.
func linerate(t *testing.T, ns, stdin string, args ...string) (int, string, string) {
	t.Helper()
	return linerateIn(t, "", ns, stdin, args...)
}

// linerateIn is linerate in the working directory dir ("" for this one).
func linerateIn(t *testing.T, dir, ns, stdin string, args ...string) (int, string, string) {
	t.Helper()
	argv := append([]string{labtest.Binary(t)}, args...)
	if ns != "" {
		argv = append([]string{"ip", "netns", "exec", ns}, argv...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// `linerate sweep run` on an ssh campaign, as an operator runs it: the
// provider block names the hosts, the key file and the dist directory;
// the profile is found with --profiles. The coordinator runs in the
// client namespace, which reaches both sshds, as an operator's machine
// reaches the lab hosts.
func TestSweepRunOnSSHPair(t *testing.T) {
	t.Parallel()
	redis, err := exec.LookPath("redis-server")
	sshtest.Need(t, err == nil, "redis-server missing (Debian redis-server)")
	l := sshtest.New(t, "cli-ssh")
	dir := t.TempDir()
	profiles := filepath.Join(dir, "profiles")
	os.MkdirAll(profiles, 0o755)
	if err := os.WriteFile(filepath.Join(profiles, "veth.yaml"), []byte("nic_address: 198.18.0.1\nirqbalance: leave\nsysctls: {net.core.somaxconn: \"1212\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	campaign := filepath.Join(dir, "ssh.yaml")
	src := `name: cli-ssh
provider:
  kind: ssh
  server: {address: "198.18.0.1:2222", user: root}
  client: {address: "198.18.0.2:2222", user: root}
  key: ` + l.KeyFile + `
  dist: ` + labtest.Dist(t) + `
tuning: veth
calibrate: {duration: 300ms, warmup: 0s}
versions:
  - {binary: ` + redis + `}
workload:
  ratio: [GET, SET]
  value-size: 1MiB
  connections: 2
  keyspace: 4
  rate: 50
  warmup: 200ms
  duration: ` + benchWindow + `
`
	if err := os.WriteFile(campaign, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	ns := netns.Of(l.Pair.Client).Namespace
	code, stdout, stderr := linerate(t, ns, "", "sweep", "run", campaign, "--out", out, "--profiles", profiles)
	if code != 0 {
		t.Fatalf("sweep run: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	run, err := sweeps.ReadRun(out)
	if err != nil {
		t.Fatal(err)
	}
	recs := run.Sorted()
	if len(recs) != 2 {
		t.Fatalf("%d cells recorded, want 2 (GET, SET)", len(recs))
	}
	for _, rec := range recs {
		if rec.Status != sweeps.StatusDone || rec.Result.Workload.Host != "198.18.0.1" || rec.Host == nil || rec.Host.Server == nil {
			t.Errorf("%s: status %s, host %s, metrics %+v", rec.CellID, rec.Status, rec.Result.Workload.Host, rec.Host)
		}
		if !strings.HasPrefix(rec.CellID, "redis-") {
			t.Errorf("cell %s: version not resolved on the server host", rec.CellID)
		}
		if rec.Tuning == nil || rec.Tuning.Drifts != 0 {
			t.Errorf("%s: tuning check %+v", rec.CellID, rec.Tuning)
		}
	}
	var snap map[string]json.RawMessage
	b, _ := os.ReadFile(filepath.Join(out, "tuning-snapshot.json"))
	if err := json.Unmarshal(b, &snap); err != nil || snap["server"] == nil || snap["client"] == nil {
		t.Errorf("tuning snapshot %s: %v", b, err)
	}
	if known, _ := os.ReadFile(filepath.Join(out, "known_hosts")); strings.Count(string(known), "ssh-ed25519") != 2 {
		t.Errorf("known_hosts:\n%s", known)
	}
	// Reverted on both hosts when the run ended.
	for _, h := range []*netns.Host{netns.Of(l.Pair.Server), netns.Of(l.Pair.Client)} {
		got, _ := exec.Command("ip", "netns", "exec", h.Namespace, "cat", "/proc/sys/net/core/somaxconn").Output()
		if strings.TrimSpace(string(got)) == "1212" {
			t.Errorf("%s: somaxconn still tuned after the run", h.Namespace)
		}
	}
}

// An aws campaign asks before launching and launches nothing on "no";
// credentials come from flags, never from the campaign file.
func TestSweepRunAWSAsksFirst(t *testing.T) {
	dir := t.TempDir()
	campaign := filepath.Join(dir, "aws.yaml")
	src := `name: cli-aws
provider: {kind: aws, instance-type: c8gn.16xlarge, region: us-east-1, ssh-from: 203.0.113.7/32, hourly-usd: 3.5}
versions:
  - {image: "valkey/valkey:9.1.0"}
workload:
  value-size: 1MB
`
	if err := os.WriteFile(campaign, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	// The preflight asks the fake, creating nothing; then the prompt.
	f := awsfake.New()
	defer f.Close()
	args := []string{"sweep", "run", campaign, "--out", filepath.Join(dir, "run"), "--access-keys-from-env", "--aws-endpoint", f.URL}
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDFAKEFAKEFAKE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "fake-secret")
	code, _, stderr := linerate(t, "", "n\n", args...)
	if code != 1 || !strings.Contains(stderr, "$7.00 per hour for the pair") || !strings.Contains(stderr, "not launched") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	// Without a price in the campaign, the prompt shows the Price List
	// API's (the fake's) for the pair, and "n" creates nothing.
	noPrice := strings.Replace(src, ", hourly-usd: 3.5", "", 1)
	noPriceFile := filepath.Join(dir, "aws-noprice.yaml")
	if err := os.WriteFile(noPriceFile, []byte(noPrice), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = linerate(t, "", "n\n", "sweep", "run", noPriceFile, "--out", filepath.Join(dir, "run3"), "--access-keys-from-env", "--aws-endpoint", f.URL)
	if code != 1 || !strings.Contains(stderr, "$2.47 per hour for the pair (2 × $1.2345)") || !strings.Contains(stderr, "not launched") {
		t.Errorf("price from the API: exit %d, stderr:\n%s", code, stderr)
	}
	if len(f.All()) != 0 {
		t.Errorf("answering no created %+v", f.All())
	}
	// Without credentials it says so before asking anything.
	code, _, stderr = linerate(t, "", "", "sweep", "run", campaign, "--out", filepath.Join(dir, "run2"))
	if code != 2 || !strings.Contains(stderr, "--aws-profile") {
		t.Errorf("no credentials: exit %d, stderr:\n%s", code, stderr)
	}
}
