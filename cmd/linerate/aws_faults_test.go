package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/linerate/linerate/infra/aws"
	"github.com/linerate/linerate/infra/aws/awsfake"
	"github.com/linerate/linerate/lab/labtest"
)

// faultLease is the lease of the coordinators in TestAWSCoordinatorKilledAnywhere:
// short, so gc may collect what a killed one left within the test.
const faultLease = 3 * time.Second

// faultTiming is the test-only timing (aws.TestTimingEnv) of those
// coordinators: quick polls, the short lease renewed five times a second,
// and SSH given up after 300ms (nothing answers SSH on the fake's
// addresses, so every up fails there and tears down: the coordinator's
// whole life but the cells, with kill points all along it).
var faultTiming = "poll=2ms,lease=" + faultLease.String() + ",renew=200ms,ssh=300ms,running=2s,delete=2s,notfound=500ms,backoff=5ms"

// A signal for a coordinator, sent at its nth EC2 call (before the fake
// answers it) or after a delay.
type killPlan struct {
	sig   syscall.Signal
	atNth int // 0: by time
	after time.Duration
	mu    sync.Mutex
	calls int
	proc  *os.Process
	fired bool
}

func (k *killPlan) call() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.calls++; k.atNth > 0 && k.calls == k.atNth {
		k.fire()
	}
}

// fire signals the process (k.mu held); before it started, as soon as it
// has.
func (k *killPlan) fire() {
	if !k.fired {
		k.fired = true
		if k.proc != nil {
			k.proc.Signal(k.sig)
		}
	}
}

func (k *killPlan) started(p *os.Process) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.proc = p
	if k.fired {
		p.Signal(k.sig)
	}
}

func (k *killPlan) String() string {
	if k == nil {
		return "no kill"
	}
	if k.atNth > 0 {
		return fmt.Sprintf("%v at EC2 call %d", k.sig, k.atNth)
	}
	return fmt.Sprintf("%v after %v", k.sig, k.after)
}

// didFire reports whether the signal was sent.
func (k *killPlan) didFire() bool {
	if k == nil {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.fired
}

// faultRuns start the coordinator processes of the test; each signs its
// calls with its own access key ID, by which the fake tells them apart.
type faultRuns struct {
	t     *testing.T
	bin   string
	kills sync.Map // key → *killPlan
}

// run starts linerate with args signed as key, kills it as planned, and
// waits for it (bounded); it returns the exit code (-1: ended by a
// signal) and the output.
func (fr *faultRuns) run(key string, k *killPlan, args ...string) (int, string) {
	cmd := exec.Command(fr.bin, args...)
	cmd.Env = append(withoutAWSSettings(os.Environ()), "AWS_ACCESS_KEY_ID="+key, "AWS_SECRET_ACCESS_KEY=fake-secret", aws.TestTimingEnv+"="+faultTiming)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if k != nil {
		fr.kills.Store(key, k)
		defer fr.kills.Delete(key)
	}
	if err := cmd.Start(); err != nil {
		fr.t.Error(err)
		return -2, ""
	}
	if k != nil {
		k.started(cmd.Process)
		if k.atNth == 0 {
			time.AfterFunc(k.after, func() { k.mu.Lock(); k.fire(); k.mu.Unlock() })
		}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), out.String()
		}
		return 0, out.String()
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		fr.t.Errorf("linerate %v (%v) did not end within 60s:\n%s", args, k, out.String())
		return -2, out.String()
	}
}

// liveOf are the live resources made by calls signed with key.
func liveOf(f *awsfake.Fake, key string) []awsfake.Resource {
	var out []awsfake.Resource
	for _, r := range f.Live() {
		if r.Creator == key {
			out = append(out, r)
		}
	}
	return out
}

// randomFaults are at most two failed answers per action, so the SDK's
// three attempts always get through, and a new instance unknown or
// unlisted for a look or two.
func randomFaults(rng *rand.Rand) awsfake.Faults {
	fl := awsfake.Faults{Throttle: map[string]int{}, DropReply: map[string]int{}, NotFoundLooks: map[int]int{}}
	actions := []string{"CreateKeyPair", "CreatePlacementGroup", "CreateSecurityGroup", "AuthorizeSecurityGroupIngress",
		"RunInstances", "DescribeInstances", "TerminateInstances", "DeleteSecurityGroup", "DeletePlacementGroup",
		"DeleteKeyPair", "CreateTags", "DescribeSecurityGroups"}
	for _, a := range actions {
		switch rng.IntN(6) {
		case 0:
			fl.Throttle[a] = 1 + rng.IntN(2)
		case 1:
			fl.DropReply[a] = 1
		}
	}
	for i := 0; i < 2; i++ {
		fl.NotFoundLooks[i] = rng.IntN(3)
	}
	fl.TagListLag = rng.IntN(2)
	return fl
}

// Coordinators of aws campaigns killed at random points (SIGKILL, SIGHUP,
// SIGTERM: at an EC2 call before its answer, or after a random delay)
// while the fake injects throttling, lost answers and EC2's eventual
// consistency; beside them, another owner's pair of the same campaign
// name lives throughout. Afterwards, with every killed lease run out, gc
// leaves nothing but that owner's pair, which nobody else ever touched.
// Runs that were not killed outright tear down all they made themselves.
// The seed is LINERATE_FAULT_SEED (default 11); each run logs its plan.
func TestAWSCoordinatorKilledAnywhere(t *testing.T) {
	t.Parallel()
	seed := uint64(11)
	if s := os.Getenv("LINERATE_FAULT_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("LINERATE_FAULT_SEED=%q: %v", s, err)
		}
		seed = v
	}
	const iterations, parallel = 60, 3
	t.Logf("seed %d, %d runs, %d at a time", seed, iterations, parallel)
	f := awsfake.New()
	defer f.Close()
	fr := &faultRuns{t: t, bin: labtest.Binary(t)}
	f.OnCallBy = func(_, key string) {
		if k, ok := fr.kills.Load(key); ok {
			k.(*killPlan).call()
		}
	}
	// The other owner: a coordinator in this process, renewing its lease.
	other := pairOnFake(t, f, "AKIDOTHEROWNER", "fault", func(c *aws.Config) { c.Lease, c.Renew = faultLease, 200*time.Millisecond })
	otherRes := liveOf(f, "AKIDOTHEROWNER")
	if len(otherRes) != 5 {
		t.Fatalf("the other owner has %d resources, want 5", len(otherRes))
	}
	dir := t.TempDir()
	campaign := filepath.Join(dir, "fault.yaml")
	if err := os.WriteFile(campaign, []byte(`name: fault
provider: {kind: aws, instance-type: c7i.large, region: us-east-1, ssh-from: 203.0.113.7/32, hourly-usd: 1}
versions:
  - {image: "valkey/valkey:9.1.0"}
workload:
  value-size: 1MB
  duration: 1s
`), 0o644); err != nil {
		t.Fatal(err)
	}
	endpoint := []string{"--access-keys-from-env", "--region", "us-east-1"}
	gc := func(who string) {
		code, out := fr.run("AKIDGC"+who, nil, append([]string{"infra", "gc", "--provider", "aws", "--endpoint", f.URL}, endpoint...)...)
		t.Logf("gc %s: exit %d\n%s", who, code, out)
	}

	var wg sync.WaitGroup
	work := make(chan int)
	for w := 0; w < parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				rng := rand.New(rand.NewPCG(seed, uint64(i)))
				key := fmt.Sprintf("AKIDRUN%03d", i)
				f.SetFaultsFor(key, randomFaults(rng))
				var k *killPlan
				if rng.IntN(5) > 0 {
					k = &killPlan{sig: []syscall.Signal{syscall.SIGKILL, syscall.SIGHUP, syscall.SIGTERM}[rng.IntN(3)]}
					if rng.IntN(2) == 0 {
						k.atNth = 1 + rng.IntN(70)
					} else {
						k.after = time.Duration(rng.IntN(1200)) * time.Millisecond
					}
				}
				run := filepath.Join(dir, "run"+strconv.Itoa(i))
				if rng.IntN(4) > 0 {
					code, out := fr.run(key, k, append([]string{"sweep", "run", campaign, "--out", run, "--yes", "--aws-endpoint", f.URL}, endpoint...)...)
					t.Logf("run %d: sweep run, %v: exit %d", i, k, code)
					selfTeardown(t, f, key, k, code, out)
					continue
				}
				// infra up, then infra down (killed too, sometimes), then
				// infra down again, which must leave nothing of the owner.
				code, out := fr.run(key, k, append([]string{"infra", "up", "--provider", "aws", "--campaign", "fault", "--dir", run,
					"--instance-type", "c7i.large", "--ssh-from", "203.0.113.7/32", "--hourly-usd", "1", "--yes", "--endpoint", f.URL}, endpoint...)...)
				t.Logf("run %d: infra up, %v: exit %d", i, k, code)
				selfTeardown(t, f, key, k, code, out)
				downArgs := append([]string{"infra", "down", "--campaign", "fault", "--dir", run, "--endpoint", f.URL}, endpoint...)
				if rng.IntN(2) == 0 {
					kd := &killPlan{sig: syscall.SIGKILL, atNth: 1 + rng.IntN(20)}
					code, _ := fr.run(key, kd, downArgs...)
					t.Logf("run %d: infra down, %v: exit %d", i, kd, code)
				}
				_, statErr := os.Stat(filepath.Join(run, "infra.json"))
				code, out = fr.run(key, nil, downArgs...)
				switch {
				case statErr == nil && code != 0:
					t.Errorf("run %d: infra down with infra.json there: exit %d\n%s", i, code, out)
				case statErr != nil && !strings.Contains(out, "nothing is up"):
					t.Errorf("run %d: infra down without infra.json: exit %d\n%s", i, code, out)
				}
				if left := liveOf(f, key); len(left) > 0 {
					t.Errorf("run %d: after infra down (exit %d), %d of its resources are live: %+v\n%s", i, code, len(left), left, out)
				}
			}
		}()
	}
	for i := 0; i < iterations; i++ {
		if i > 0 && i%20 == 0 {
			gc(strconv.Itoa(i)) // beside the running ones: they renew, gc keeps them
		}
		work <- i
	}
	close(work)
	wg.Wait()

	// Past every lease of the killed coordinators, gc leaves only the
	// other owner's pair.
	var last time.Time
	for _, r := range f.Live() {
		if l, err := time.Parse(time.RFC3339, r.Tags[aws.TagLease]); err == nil && r.Creator != "AKIDOTHEROWNER" && l.After(last) {
			last = l
		}
	}
	time.Sleep(time.Until(last) + time.Second)
	gc("final")
	for _, r := range f.Live() {
		if r.Creator != "AKIDOTHEROWNER" {
			t.Errorf("after gc past the lease: %s %s made by %s is live (%s)", r.Kind, r.ID, r.Creator, r.Tags[aws.TagOwner])
		}
	}
	live := map[string]bool{}
	for _, r := range f.Live() {
		live[r.ID] = true
	}
	for _, r := range f.All() {
		if r.Creator != "AKIDOTHEROWNER" {
			continue
		}
		if !live[r.ID] {
			t.Errorf("the other owner's %s %s is gone", r.Kind, r.ID)
		}
		for _, c := range r.Touched {
			if c != "CreateTags by AKIDOTHEROWNER" {
				t.Errorf("the other owner's %s %s was touched: %s", r.Kind, r.ID, c)
			}
		}
	}
	if err := other.Down(context.Background()); err != nil {
		t.Fatal(err)
	}
	if live := f.Live(); len(live) != 0 {
		t.Errorf("%d live at the end: %+v", len(live), live)
	}
}

// selfTeardown checks a coordinator that was not killed outright: it
// tore down everything it made before it ended (SIGTERM is a request to
// stop; SIGHUP may be too, or may kill outright).
func selfTeardown(t *testing.T, f *awsfake.Fake, key string, k *killPlan, code int, out string) {
	t.Helper()
	switch {
	case k.didFire() && k.sig != syscall.SIGTERM:
		return
	case code == -1:
		return // SIGTERM before the handler was in place: nothing made yet
	}
	if left := liveOf(f, key); len(left) > 0 {
		t.Errorf("%s (%v, exit %d) left %d resources: %+v\n%s", key, k, code, len(left), left, out)
	}
}
