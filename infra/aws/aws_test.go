package aws

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/aws/awsfake"
	"github.com/linerate/linerate/infra/netns"
)

func testConfig(f *awsfake.Fake) Config {
	return Config{
		Access: Access{Region: "us-east-1", AccessKeyID: "AKIDFAKEFAKEFAKE", SecretAccessKey: "fake-secret",
			Endpoint: f.URL, MaxBackoff: 5 * time.Millisecond},
		InstanceType:   "c8gn.16xlarge",
		SSHFrom:        netip.MustParsePrefix("203.0.113.7/32"),
		Poll:           2 * time.Millisecond,
		RunningTimeout: 500 * time.Millisecond,
		SSHTimeout:     time.Second,
		DeleteTimeout:  time.Second,
	}
}

// newProvider talks to the fake only; hosts are stand-ins that never
// connect anywhere.
func newProvider(t *testing.T, f *awsfake.Fake, edit func(*Config)) *Provider {
	t.Helper()
	cfg := testConfig(f)
	if edit != nil {
		edit(&cfg)
	}
	p, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.WaitSSH = func(ctx context.Context, addr string) error {
		if !strings.HasSuffix(addr, ":22") {
			t.Errorf("waited for SSH on %s", addr)
		}
		return nil
	}
	p.Connect = func(ctx context.Context, in Instance, key, known string) (infra.Host, error) {
		return &netns.Host{Label: in.ID, Addr: in.PrivateIP}, nil
	}
	return p
}

func assertNothingLive(t *testing.T, f *awsfake.Fake, when string) {
	t.Helper()
	if live := f.Live(); len(live) > 0 {
		var s []string
		for _, r := range live {
			s = append(s, r.Kind+" "+r.ID+" "+r.State)
		}
		t.Fatalf("%s: the ledger still holds %d live resources: %s", when, len(live), strings.Join(s, "; "))
	}
	if len(f.All()) == 0 && when != "refused" {
		t.Fatalf("%s: nothing was ever created: the scenario did not reach AWS", when)
	}
}

func count(calls []string, action string) int {
	n := 0
	for _, c := range calls {
		if c == action {
			n++
		}
	}
	return n
}

func spec(t *testing.T) infra.Spec {
	return infra.Spec{Campaign: "study-1", Dir: t.TempDir()}
}

func TestUpDownScenarios(t *testing.T) {
	cases := []struct {
		name    string
		faults  awsfake.Faults
		edit    func(*testing.T, *Config)
		wantErr string                                           // Up fails with this; "" = succeeds
		check   func(t *testing.T, f *awsfake.Fake, p *Provider) // after a successful Up
	}{
		{name: "happy path", check: func(t *testing.T, f *awsfake.Fake, p *Provider) {
			calls := f.Calls()
			if count(calls, "RunInstances") != 1 {
				t.Errorf("RunInstances called %d times, want one call for both", count(calls, "RunInstances"))
			}
			var insts []awsfake.Resource
			for _, r := range f.All() {
				switch r.Kind {
				case "instance":
					insts = append(insts, r)
				case "security-group":
					sort.Strings(r.Rules)
					want := []string{"-1 from " + r.ID, "tcp:22:22 from 203.0.113.7/32"}
					if strings.Join(r.Rules, "|") != strings.Join(want, "|") {
						t.Errorf("security group rules %q, want %q", r.Rules, want)
					}
				}
				if r.Tags[TagCampaign] != "study-1" || r.Tags[TagDeadline] == "" || r.Tags[TagOwner] != p.Owner() || r.Tags[TagLease] == "" {
					t.Errorf("%s %s tags %v: want the campaign, the owner %s, the lease and the deadline", r.Kind, r.ID, r.Tags, p.Owner())
				}
			}
			if len(insts) != 2 {
				t.Fatalf("%d instances", len(insts))
			}
			for _, in := range insts {
				if !strings.Contains(in.UserData, "shutdown -h +240") || !strings.Contains(in.UserData, "docker") {
					t.Errorf("user data lacks the dead-man shutdown or docker:\n%s", in.UserData)
				}
				if in.ShutdownBehavior != "terminate" || in.PlacementGroup != "linerate-study-1-"+p.Owner() || in.ImageID != "ami-0a1b2c3d4e5f60001" {
					t.Errorf("instance %+v", in)
				}
			}
			if got := p.Instances(); len(got) != 2 || got[0].Index != 0 || !got[0].PrivateIP.IsValid() {
				t.Errorf("instances %+v", got)
			}
		}},
		{name: "no capacity in the first zone", faults: awsfake.Faults{NoCapacityZones: []string{"us-east-1a"}},
			check: func(t *testing.T, f *awsfake.Fake, p *Provider) {
				if n := count(f.Calls(), "RunInstances"); n != 2 {
					t.Errorf("RunInstances %d times, want 2 (one refused zone)", n)
				}
				for _, in := range p.Instances() {
					if in.Zone != "us-east-1b" {
						t.Errorf("instance %s in %s, want us-east-1b", in.ID, in.Zone)
					}
				}
				// us-east-1b's instances are in a group of their own.
				for _, r := range f.Live() {
					if r.Kind == "instance" && r.PlacementGroup != "linerate-study-1-"+p.Owner()+"-us-east-1b" {
						t.Errorf("instance %s in group %s, want us-east-1b's", r.ID, r.PlacementGroup)
					}
				}
			}},
		{name: "not offered in the first zone", faults: awsfake.Faults{NotOffered: map[string][]string{"c8gn.16xlarge": {"us-east-1a"}}},
			check: func(t *testing.T, f *awsfake.Fake, p *Provider) {
				if n := count(f.Calls(), "RunInstances"); n != 1 {
					t.Errorf("RunInstances %d times, want 1 (us-east-1a skipped: not offered)", n)
				}
				for _, in := range p.Instances() {
					if in.Zone != "us-east-1b" {
						t.Errorf("instance %s in %s, want us-east-1b", in.ID, in.Zone)
					}
				}
			}},
		{name: "no capacity anywhere", faults: awsfake.Faults{NoCapacityZones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}},
			wantErr: "no zone had capacity"},
		{name: "zones given", faults: awsfake.Faults{NoCapacityZones: []string{"us-east-1a"}},
			edit: func(_ *testing.T, c *Config) { c.Zones = []string{"us-east-1a"} }, wantErr: "us-east-1a (InsufficientInstanceCapacity)"},
		{name: "throttled", faults: awsfake.Faults{Throttle: map[string]int{"RunInstances": 2, "DescribeInstances": 1, "CreateSecurityGroup": 1}},
			check: func(t *testing.T, f *awsfake.Fake, p *Provider) {
				if n := count(f.Calls(), "RunInstances"); n != 3 {
					t.Errorf("RunInstances %d times, want 3 (two throttled)", n)
				}
			}},
		{name: "placement group pending", faults: awsfake.Faults{PlacementPendingPolls: 3},
			check: func(t *testing.T, f *awsfake.Fake, p *Provider) {
				if n := count(f.Calls(), "DescribePlacementGroups"); n < 4 {
					t.Errorf("DescribePlacementGroups %d times, want at least 4", n)
				}
			}},
		{name: "instance never runs", faults: awsfake.Faults{NeverRunning: true}, wantErr: "not running after"},
		{name: "deletes in use once", faults: awsfake.Faults{InUseOnce: map[string]bool{"security-group": true, "placement-group": true, "key-pair": true}}},
		{name: "imported key", edit: func(t *testing.T, c *Config) {
			dir := t.TempDir()
			c.PublicKeyFile = filepath.Join(dir, "lr-test-key.pub")
			c.PrivateKeyFile = filepath.Join(dir, "lr-test-key")
			os.WriteFile(c.PublicKeyFile, []byte("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeFakeFakeFakeFakeFakeFakeFakeFakeFakeFake test\n"), 0o600)
		}, check: func(t *testing.T, f *awsfake.Fake, p *Provider) {
			if count(f.Calls(), "ImportKeyPair") != 1 || count(f.Calls(), "CreateKeyPair") != 0 {
				t.Errorf("calls %v: want ImportKeyPair only", f.Calls())
			}
		}},
		{name: "leftovers of a crashed run", edit: func(t *testing.T, c *Config) {}, check: func(t *testing.T, f *awsfake.Fake, p *Provider) {
			if n := count(f.Calls(), "TerminateInstances"); n != 1 {
				t.Errorf("leftover instance not terminated before the launch (%d terminations)", n)
			}
			var other int
			for _, r := range f.Live() {
				switch r.Tags[TagOwner] {
				case "crashed":
					t.Errorf("the crashed run's %s %s (lease expired) survived Up", r.Kind, r.ID)
				case "running":
					other++
				}
			}
			if n := len(f.Live()); n != 5+4 || other != 4 {
				t.Errorf("%d live after Up (%d of the running owner), want the new pair, groups and key (5) and the running owner's 4", n, other)
			}
		}},
		{name: "unknown instance type", edit: func(_ *testing.T, c *Config) { c.InstanceType = "x9.huge" }, wantErr: "InvalidInstanceType"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := awsfake.New()
			defer f.Close()
			f.Faults = tc.faults
			if tc.name == "leftovers of a crashed run" {
				// Two earlier runs of the campaign: one whose lease ran
				// out, one that still renews it (another machine).
				addPair(f, "study-1", "crashed", time.Now().Add(-time.Minute))
				addPair(f, "study-1", "running", time.Now().Add(10*time.Minute))
			}
			p := newProvider(t, f, func(c *Config) {
				if tc.edit != nil {
					tc.edit(t, c)
				}
			})
			s := spec(t)
			pair, err := p.Up(context.Background(), s)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want an error containing %q, got %v", tc.wantErr, err)
				}
				if tc.name != "unknown instance type" {
					assertNothingLive(t, f, "after the failed Up")
				}
				return
			}
			if err != nil {
				t.Fatalf("up: %v (calls %v)", err, f.Calls())
			}
			if !strings.HasPrefix(pair.Server.DataAddr().String(), "172.31.") || pair.Server.DataAddr() == pair.Client.DataAddr() {
				t.Errorf("data addresses %v %v", pair.Server.DataAddr(), pair.Client.DataAddr())
			}
			if tc.check != nil {
				tc.check(t, f, p)
			}
			pem := filepath.Join(s.Dir, "linerate-study-1-"+p.Owner()+".pem")
			if tc.name != "imported key" {
				if _, err := os.Stat(pem); err != nil {
					t.Errorf("created key's private half not kept: %v", err)
				}
			}
			if err := p.Down(context.Background()); err != nil {
				t.Fatalf("down: %v", err)
			}
			for _, r := range f.Live() {
				if r.Tags[TagOwner] == p.Owner() {
					t.Errorf("after Down: %s %s of this owner still live", r.Kind, r.ID)
				}
			}
			if _, err := os.Stat(pem); !os.IsNotExist(err) {
				t.Errorf("after Down: %s: %v, want it gone with its key pair", pem, err)
			}
			if tc.name != "leftovers of a crashed run" {
				assertNothingLive(t, f, "after Down")
			}
			if err := p.Down(context.Background()); err != nil {
				t.Errorf("second Down: %v", err)
			}
		})
	}
}

// Ctrl-C at each step of Up: Up returns the cancellation and has already
// torn everything down, including instances whose launch answer was lost.
func TestCancelHalfwayThroughUp(t *testing.T) {
	steps := []struct {
		action string
		hang   bool   // the answer never arrives
		after  string // cancel at the first action after this one
	}{
		{"DescribeInstances", false, ""}, // the listing of expired leftovers
		{"DescribeInstanceTypes", false, ""}, {"ssm:GetParameter", false, ""}, {"CreateKeyPair", false, ""},
		{"CreatePlacementGroup", false, ""}, {"DescribePlacementGroups", false, "CreatePlacementGroup"},
		{"CreateSecurityGroup", false, ""}, {"AuthorizeSecurityGroupIngress", false, ""},
		{"RunInstances", false, ""}, {"RunInstances", true, ""},
		{"DescribeInstances", false, "RunInstances"}, // waiting for the launched pair to run
	}
	for _, st := range steps {
		name := st.action
		if st.hang {
			name += " answer lost"
		}
		if st.after != "" {
			name += " after " + st.after
		}
		t.Run(name, func(t *testing.T) {
			f := awsfake.New()
			defer f.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			f.OnCall = func(a string) {
				calls := f.Calls()
				if a == st.action && (st.after == "" || count(calls[:len(calls)-1], st.after) > 0) {
					cancel()
				}
			}
			if st.hang {
				f.Faults.HangAfter = map[string]bool{st.action: true}
			}
			p := newProvider(t, f, nil)
			_, err := p.Up(ctx, spec(t))
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("want the cancellation, got %v", err)
			}
			if count(f.Calls(), "RunInstances") > 0 && count(f.Calls(), "TerminateInstances") == 0 {
				t.Errorf("instances launched, none terminated: calls %v", f.Calls())
			}
			live := f.Live()
			if len(live) > 0 {
				t.Fatalf("after a cancelled Up, live: %+v", live)
			}
		})
	}
}

// addPair puts a pair's resources of campaign and owner, with a lease
// until lease, in the fake's ledger; owner "" is a pair of a linerate
// before owner tags, whose dead-man deadline is lease.
func addPair(f *awsfake.Fake, campaign, owner string, lease time.Time) {
	tags := map[string]string{TagCampaign: campaign, TagCreated: time.Now().Add(-3 * time.Hour).UTC().Format(time.RFC3339)}
	if owner != "" {
		tags[TagOwner], tags[TagLease] = owner, lease.UTC().Format(time.RFC3339)
	} else {
		tags[TagDeadline] = lease.UTC().Format(time.RFC3339)
	}
	name := resourceName(campaign, owner)
	sg := f.Add(awsfake.Resource{Kind: "security-group", Name: name, Tags: tags})
	f.Add(awsfake.Resource{Kind: "placement-group", Name: name, State: "available", Tags: tags})
	f.Add(awsfake.Resource{Kind: "key-pair", Name: name, Tags: tags})
	f.Add(awsfake.Resource{Kind: "instance", State: "running", SecurityGroup: sg.ID, PlacementGroup: name, Tags: tags})
}

// GC goes by owner and lease: an owner whose lease has passed is removed
// whatever its campaign is called, one that renews is kept, and so is
// anything without linerate's tags.
func TestGC(t *testing.T) {
	f := awsfake.New()
	defer f.Close()
	now := time.Now().Truncate(time.Second) // tags hold whole seconds
	addPair(f, "study", "crashed", now.Add(-5*time.Minute))
	addPair(f, "study", "running", now.Add(15*time.Minute))
	addPair(f, "other", "handed-over", now.Add(3*time.Hour))
	addPair(f, "old", "", now.Add(-time.Hour))       // an older linerate's, dead-man passed
	addPair(f, "older", "", now.Add(30*time.Minute)) // its dead-man still ahead
	f.Add(awsfake.Resource{Kind: "instance", State: "running", Tags: map[string]string{"owner": "someone else"}})
	p := newProvider(t, f, nil)

	claims, err := p.Claims(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range claims {
		got[c.Campaign+"/"+c.Owner] = c.Why(now)
		if len(c.Resources) != 4 {
			t.Errorf("claim %s/%s: %d resources, want 4", c.Campaign, c.Owner, len(c.Resources))
		}
	}
	want := map[string]string{
		"study/crashed": "lease expired 5m0s ago", "study/running": "lease runs 15m0s more", "other/handed-over": "lease runs 3h0m0s more",
		"old/":   "no owner tag (made by an older linerate); dead-man deadline passed 1h0m0s ago",
		"older/": "no owner tag (made by an older linerate); dead-man deadline in 30m0s",
	}
	if len(got) != len(want) {
		t.Errorf("claims %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("claim %s: %q, want %q", k, got[k], w)
		}
	}
	if len(f.Live()) != 21 || count(f.Calls(), "TerminateInstances") != 0 {
		t.Fatalf("listing claims changed something: %d live", len(f.Live()))
	}
	for _, c := range claims {
		if c.Expired(time.Now()) {
			if err := p.Collect(context.Background(), c); err != nil {
				t.Errorf("collect %s/%s: %v", c.Campaign, c.Owner, err)
			}
		}
	}
	for _, r := range f.Live() {
		if r.Tags[TagOwner] == "crashed" || r.Tags[TagCampaign] == "old" {
			t.Errorf("expired %s %s survived gc", r.Kind, r.ID)
		}
		if len(r.Touched) > 0 {
			t.Errorf("gc touched %s %s of a live owner: %v", r.Kind, r.ID, r.Touched)
		}
	}
	if n := len(f.Live()); n != 13 {
		t.Errorf("%d live after gc, want 13 (three kept owners and the untagged instance)", n)
	}
	// An owner that renews between the listing and the removal keeps its
	// resources.
	for _, c := range claims {
		if c.Owner == "running" {
			c.Lease = now.Add(-time.Minute)
			if err := p.Collect(context.Background(), c); !errors.Is(err, ErrLeaseRenewed) {
				t.Errorf("collect of a renewed claim: %v, want ErrLeaseRenewed", err)
			}
		}
	}
	// Down of an owner from a fresh process finds it by tag, with an
	// account handle that knows nothing of launching.
	acct, err := OpenAccount(context.Background(), Config{Access: testConfig(f).Access, Poll: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	q := acct.Pair("study", "running", t.TempDir())
	if err := q.Down(context.Background()); err != nil {
		t.Fatal(err)
	}
	res, err := q.Resources(context.Background(), Selector{Owner: "running"})
	if err != nil || len(res) != 0 {
		t.Errorf("after Down of running: %+v %v", res, err)
	}
	if n := len(f.Live()); n != 9 {
		t.Errorf("%d live after the Down of one owner, want 9", n)
	}
}

func TestRefusals(t *testing.T) {
	f := awsfake.New()
	defer f.Close()
	base := testConfig(f)
	cases := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no endpoint in a test", func(c *Config) { c.Endpoint = "" }, "tests must use the local fake"},
		{"no region", func(c *Config) { c.Region = "" }, "aws region: empty"},
		{"no credentials", func(c *Config) { c.AccessKeyID = "" }, "aws credentials"},
		{"ssh from anywhere", func(c *Config) { c.SSHFrom = netip.MustParsePrefix("0.0.0.0/0") }, "whole internet"},
		{"no ssh-from", func(c *Config) { c.SSHFrom = netip.Prefix{} }, "aws ssh-from: empty"},
		{"half a key", func(c *Config) { c.PublicKeyFile = "/k.pub" }, "aws key"},
		{"short dead-man", func(c *Config) { c.DeadMan = time.Minute }, "aws dead-man"},
		{"bad type", func(c *Config) { c.InstanceType = "big" }, "aws instance-type"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.edit(&c)
			_, err := New(context.Background(), c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want %q, got %v", tc.want, err)
			}
		})
	}
	if len(f.Calls()) != 0 {
		t.Errorf("refused configurations reached the endpoint: %v", f.Calls())
	}
	// Up without a campaign directory is refused before any call.
	p := newProvider(t, f, nil)
	if _, err := p.Up(context.Background(), infra.Spec{Campaign: "c"}); err == nil {
		t.Error("up without a directory accepted")
	}
	if len(f.Calls()) != 0 {
		t.Errorf("calls %v", f.Calls())
	}
}

func TestUserDataAndParameter(t *testing.T) {
	ud := UserData(90 * time.Minute)
	if !strings.HasPrefix(ud, "#!/bin/bash\n") || !strings.Contains(ud, "shutdown -h +90") {
		t.Errorf("user data:\n%s", ud)
	}
	if AMIParameter("arm64") != "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-arm64" {
		t.Error(AMIParameter("arm64"))
	}
}

// Settings make the launch Config (the operator's region winning over
// theirs), and what is wrong names its field.
func TestSettings(t *testing.T) {
	var from Source
	if err := from.UnmarshalText([]byte("203.0.113.7")); err != nil || from.String() != "203.0.113.7/32" {
		t.Errorf("an address as ssh-from: %v %v", from, err)
	}
	if err := from.UnmarshalText([]byte("me")); err == nil {
		t.Error("ssh-from \"me\" accepted")
	}
	study := Settings{InstanceType: "c8gn.16xlarge", Count: 2, Placement: "cluster", OS: "al2023", Region: "us-east-1",
		Zones: []string{"us-east-1a"}, SSHFrom: from, DeadMan: 2 * time.Hour, HourlyUSD: 3.5, LinkGbps: 200}
	if err := study.Validate(); err != nil {
		t.Fatal(err)
	}
	c := study.Config(Access{Profile: "lab"})
	if c.InstanceType != "c8gn.16xlarge" || c.SSHFrom.String() != "203.0.113.7/32" || c.DeadMan != 2*time.Hour || c.HourlyUSD != 3.5 ||
		c.Zones[0] != "us-east-1a" || c.Region != "us-east-1" || c.Profile != "lab" || c.LinkGbps != 200 {
		t.Errorf("%+v", c)
	}
	if c := study.Config(Access{Region: "eu-west-1"}); c.Region != "eu-west-1" {
		t.Errorf("the operator's region lost to the settings': %s", c.Region)
	}
	// A count left out is the campaign's clients plus the server; one
	// given must agree with them.
	three := study
	three.Count = 0
	if err := three.Clients(3); err != nil || three.Count != 4 || three.Config(Access{}).InstanceCount() != 4 {
		t.Errorf("clients: 3 with no count: %v, count %d", err, three.Count)
	}
	if fields, _ := infra.FieldErrors(study.Clients(3)); len(fields) != 1 || fields[0].Field != "count" {
		t.Errorf("count 2 with clients: 3: %v", fields)
	}
	for _, tc := range []struct {
		edit  func(*Settings)
		field string
	}{
		{func(s *Settings) { s.InstanceType = "" }, "instance-type"},
		{func(s *Settings) { s.InstanceType = "big" }, "instance-type"},
		{func(s *Settings) { s.Count = 1 }, "count"},
		{func(s *Settings) { s.Count = 18 }, "count"},
		{func(s *Settings) { s.Placement = "spread" }, "placement"},
		{func(s *Settings) { s.OS = "ubuntu" }, "os"},
		{func(s *Settings) { s.DeadMan = time.Minute }, "dead-man"},
		{func(s *Settings) { s.HourlyUSD = -1 }, "hourly-usd"},
		{func(s *Settings) { s.LinkGbps = -1 }, "link-gbps"},
		{func(s *Settings) { s.LinkGbps = 20000 }, "link-gbps"},
		{func(s *Settings) { s.PublicKey = "/k.pub" }, "private-key"},
		{func(s *Settings) { s.PrivateKey = "/k" }, "public-key"},
	} {
		s := study
		tc.edit(&s)
		fields, _ := infra.FieldErrors(s.Validate())
		if len(fields) != 1 || fields[0].Field != tc.field {
			t.Errorf("%+v: want one error naming %s, got %v", s, tc.field, fields)
		}
	}
}

// The cost prompt's price comes from the Price List API (the fake's list):
// one on-demand Linux price for the type in the region, or an error that
// leaves the price unknown rather than a guess.
func TestHourlyPrice(t *testing.T) {
	f := awsfake.New()
	defer f.Close()
	p, err := PricingClient(context.Background(), testConfig(f).Access)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		itype, region string
		want          float64
		wantErr       bool
	}{
		{"c7i.large", "us-east-1", 0.0625, false},
		{"c8gn.16xlarge", "us-east-1", 1.2345, false},
		{"c8gn.16xlarge", "eu-west-1", 0, true}, // the fake lists us-east-1 only
		{"m9.nosuch", "us-east-1", 0, true},
	} {
		got, err := HourlyPrice(context.Background(), p, tc.itype, tc.region)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%s in %s: %v, %v; want %v (error %v)", tc.itype, tc.region, got, err, tc.want, tc.wantErr)
		}
	}
	cfg := testConfig(f)
	cfg.InstanceType = "c7i.large"
	if err := LookUpPrice(context.Background(), &cfg); err != nil || cfg.HourlyUSD != 0.0625 {
		t.Errorf("LookUpPrice: %v, %v", cfg.HourlyUSD, err)
	}
	cfg.HourlyUSD = 9.5 // given by the operator: kept, not asked
	if err := LookUpPrice(context.Background(), &cfg); err != nil || cfg.HourlyUSD != 9.5 {
		t.Errorf("a given price was replaced: %v, %v", cfg.HourlyUSD, err)
	}
	if count(f.Calls(), "pricing:GetProducts") != 5 {
		t.Errorf("calls %v", f.Calls())
	}
	if len(f.All()) != 0 {
		t.Errorf("a price lookup created resources: %+v", f.All())
	}
}
