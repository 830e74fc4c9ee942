package aws

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/infra/aws/awsfake"
)

// liveIDs are the IDs of the resources live in the fake now.
func liveIDs(f *awsfake.Fake) map[string]bool {
	ids := map[string]bool{}
	for _, r := range f.Live() {
		ids[r.ID] = true
	}
	return ids
}

// untouched fails when any resource in ids was changed since its creation
// or is gone.
func untouched(t *testing.T, f *awsfake.Fake, ids map[string]bool, when string) {
	t.Helper()
	live := liveIDs(f)
	for _, r := range f.All() {
		if !ids[r.ID] {
			continue
		}
		if !live[r.ID] || len(r.Touched) > 0 {
			t.Errorf("%s: the other owner's %s %s was touched (live %v, changes %v)", when, r.Kind, r.ID, live[r.ID], r.Touched)
		}
	}
}

// Two coordinators bring up the same campaign at once (two machines, or
// two run directories): each owns its own pair, and neither Up nor Down
// of one touches the other's.
func TestTwoOwnersOfOneCampaign(t *testing.T) {
	f := awsfake.New()
	defer f.Close()
	a := newProvider(t, f, nil)
	if _, err := a.Up(context.Background(), spec(t)); err != nil {
		t.Fatal(err)
	}
	mine := liveIDs(f)
	b := newProvider(t, f, func(c *Config) { c.AccessKeyID = "AKIDSECONDOWNER" })
	if _, err := b.Up(context.Background(), spec(t)); err != nil {
		t.Fatalf("second owner's up: %v", err)
	}
	untouched(t, f, mine, "after the second owner's Up")
	if n := len(f.Live()); n != 2*len(mine) {
		t.Errorf("%d live, want two pairs (%d each)", n, len(mine))
	}
	if err := b.Down(context.Background()); err != nil {
		t.Fatal(err)
	}
	untouched(t, f, mine, "after the second owner's Down")
	if n := len(f.Live()); n != len(mine) {
		t.Errorf("%d live after the second owner's Down, want the first pair's %d", n, len(mine))
	}
	if err := a.Down(context.Background()); err != nil {
		t.Fatal(err)
	}
	assertNothingLive(t, f, "after both Downs")
}

// EC2 is eventually consistent and answers get lost: Up and Down get past
// both, and nothing is left.
func TestEventualConsistency(t *testing.T) {
	cases := []struct {
		name   string
		faults awsfake.Faults
		cancel string // cancel Up's context when this action is served
		check  func(t *testing.T, f *awsfake.Fake)
	}{
		{name: "instances unknown right after RunInstances", faults: awsfake.Faults{NotFoundLooks: map[int]int{0: 2, 1: 3}}},
		{name: "one unknown ID in a teardown", faults: awsfake.Faults{NotFoundLooks: map[int]int{1: 1}}, cancel: "RunInstances"},
		{name: "lost RunInstances answer, listed by tag only later", cancel: "RunInstances",
			faults: awsfake.Faults{HangAfter: map[string]bool{"RunInstances": true}, TagListLag: 1}},
		{name: "lost answers of every create, resent by the SDK",
			faults: awsfake.Faults{DropReply: map[string]int{"CreateKeyPair": 1, "CreatePlacementGroup": 1,
				"CreateSecurityGroup": 1, "AuthorizeSecurityGroupIngress": 1, "RunInstances": 1}},
			check: func(t *testing.T, f *awsfake.Fake) {
				n := 0
				for _, r := range f.All() {
					if r.Kind == "instance" {
						n++
					}
				}
				if n != 2 {
					t.Errorf("%d instances launched, want 2 (the resent RunInstances is the same launch)", n)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := awsfake.New()
			defer f.Close()
			f.Faults = tc.faults
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel != "" {
				f.OnCall = func(a string) {
					if a == tc.cancel {
						cancel()
					}
				}
			}
			p := newProvider(t, f, nil)
			_, err := p.Up(ctx, spec(t))
			switch {
			case tc.cancel == "" && err != nil:
				t.Fatalf("up: %v", err)
			case tc.cancel != "" && err == nil:
				t.Fatal("up survived its cancellation")
			case tc.cancel != "":
				// A failed Up has torn down before returning.
				assertNothingLive(t, f, "after the cancelled Up ("+err.Error()+")")
			}
			if tc.check != nil {
				tc.check(t, f)
			}
			if err := p.Down(context.Background()); err != nil {
				t.Fatalf("down: %v", err)
			}
			assertNothingLive(t, f, "after Down")
		})
	}
}

// Key files given as ~/… are the user's; a created key's private half
// goes with its key pair.
func TestKeyFiles(t *testing.T) {
	f := awsfake.New()
	defer f.Close()
	home := t.TempDir()
	t.Setenv("HOME", home)
	os.WriteFile(filepath.Join(home, "lab.pub"), []byte("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeFakeFakeFakeFakeFakeFakeFakeFakeFakeFake test\n"), 0o600)
	p := newProvider(t, f, func(c *Config) { c.PublicKeyFile, c.PrivateKeyFile = "~/lab.pub", "~/lab" })
	if _, err := p.Up(context.Background(), spec(t)); err != nil {
		t.Fatalf("up with ~/lab.pub: %v", err)
	}
	if err := p.Down(context.Background()); err != nil {
		t.Fatal(err)
	}
	assertNothingLive(t, f, "after Down")

	s := spec(t)
	q := newProvider(t, f, nil)
	if _, err := q.Up(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	pems, _ := filepath.Glob(filepath.Join(s.Dir, "*.pem"))
	if len(pems) != 1 {
		t.Fatalf("created key pair: private keys %v, want one", pems)
	}
	if err := q.Down(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pems[0]); !os.IsNotExist(err) {
		t.Errorf("%s still there after Down (%v): the private key outlives its key pair", pems[0], err)
	}
}

// SSH is admitted from a narrow range only, unless the operator says a
// wide one is meant.
func TestSSHFromWidth(t *testing.T) {
	f := awsfake.New()
	defer f.Close()
	for _, tc := range []struct {
		from string
		ok   bool
	}{
		{"203.0.113.7/32", true}, {"203.0.113.0/24", true}, {"203.0.0.0/16", false}, {"10.0.0.0/8", false},
		{"2001:db8:1:2::/64", true}, {"2001:db8:1::/56", true}, {"2001:db8::/48", false}, {"::/0", false},
	} {
		c := testConfig(f)
		c.SSHFrom = netip.MustParsePrefix(tc.from)
		_, err := New(context.Background(), c)
		if tc.ok != (err == nil) {
			t.Errorf("ssh-from %s: %v, want accepted %v", tc.from, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "--ssh-from-wide") {
			t.Errorf("ssh-from %s: %v does not name --ssh-from-wide", tc.from, err)
		}
	}
}

// A running owner renews its lease: past the first lease its pair is
// still its own, and GC keeps it; Down stops the renewal; HandOver sets
// the lease to the dead-man deadline and stops renewing.
func TestLeaseRenewedWhileRunning(t *testing.T) {
	f := awsfake.New()
	defer f.Close()
	p := newProvider(t, f, func(c *Config) { c.Lease, c.Renew = 2*time.Second, 100*time.Millisecond })
	if _, err := p.Up(context.Background(), spec(t)); err != nil {
		t.Fatal(err)
	}
	first := leaseOf(t, f, p.Owner())
	time.Sleep(time.Until(first)) // past the first lease
	// Renewed every 100ms; a loaded machine may delay one, hence a bound.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		got := leaseOf(t, f, p.Owner())
		if got.After(first) && got.After(time.Now()) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lease %v at %v (first %v): not renewed", got, time.Now(), first)
		}
	}
	claims, err := p.Claims(context.Background(), "")
	if err != nil || len(claims) != 1 || claims[0].Expired(time.Now()) {
		t.Fatalf("claims %+v, %v: want one live claim", claims, err)
	}
	if err := p.Down(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := count(f.Calls(), "CreateTags")
	if n == 0 {
		t.Fatal("no renewal")
	}
	time.Sleep(300 * time.Millisecond)
	if m := count(f.Calls(), "CreateTags"); m != n {
		t.Errorf("%d renewals after Down", m-n)
	}

	q := newProvider(t, f, func(c *Config) { c.Lease, c.Renew, c.DeadMan = 2*time.Second, 100*time.Millisecond, 90*time.Minute })
	if _, err := q.Up(context.Background(), spec(t)); err != nil {
		t.Fatal(err)
	}
	until, err := q.HandOver(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Until(until); d < 89*time.Minute || d > 90*time.Minute {
		t.Errorf("handed over until %v (in %v), want the dead-man deadline in 90m", until, d)
	}
	if got := leaseOf(t, f, q.Owner()); !got.Equal(until.Truncate(time.Second)) {
		t.Errorf("lease %v after HandOver, want %v", got, until)
	}
	n = count(f.Calls(), "CreateTags")
	time.Sleep(300 * time.Millisecond)
	if m := count(f.Calls(), "CreateTags"); m != n {
		t.Errorf("%d renewals after HandOver", m-n)
	}
	if err := q.Down(context.Background()); err != nil {
		t.Fatal(err)
	}
	assertNothingLive(t, f, "after Down")
}

// leaseOf is the earliest lease among owner's live resources: every one
// must have been renewed.
func leaseOf(t *testing.T, f *awsfake.Fake, owner string) time.Time {
	t.Helper()
	var min time.Time
	for _, r := range f.Live() {
		if r.Tags[TagOwner] != owner {
			continue
		}
		l, err := time.Parse(time.RFC3339, r.Tags[TagLease])
		if err != nil {
			t.Fatalf("%s %s: lease %q: %v", r.Kind, r.ID, r.Tags[TagLease], err)
		}
		if min.IsZero() || l.Before(min) {
			min = l
		}
	}
	if min.IsZero() {
		t.Fatalf("owner %s has nothing live", owner)
	}
	return min
}

// The test-only timings apply against a loopback endpoint only.
func TestTestTimingOnlyForLoopback(t *testing.T) {
	f := awsfake.New()
	defer f.Close()
	t.Setenv(TestTimingEnv, "poll=1ms,lease=3s,renew=100ms")
	c := testConfig(f)
	p, err := New(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if p.cfg.Lease != 3*time.Second || p.cfg.Renew != 100*time.Millisecond || p.cfg.Poll != time.Millisecond {
		t.Errorf("timings %v %v %v not applied", p.cfg.Lease, p.cfg.Renew, p.cfg.Poll)
	}
	for _, ep := range []string{"https://ec2.us-east-1.amazonaws.com", "http://203.0.113.7:4566", ""} {
		c.Endpoint = ep
		if _, err := New(context.Background(), c); err == nil || !strings.Contains(err.Error(), TestTimingEnv) {
			t.Errorf("endpoint %q: %v, want the timings refused", ep, err)
		}
	}
	t.Setenv(TestTimingEnv, "lease=soon")
	c.Endpoint = f.URL
	if _, err := New(context.Background(), c); err == nil {
		t.Error("a bad timing accepted")
	}
	if len(f.Calls()) != 0 {
		t.Errorf("calls %v", f.Calls())
	}
}
