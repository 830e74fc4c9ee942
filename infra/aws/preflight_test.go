package aws

import (
	"context"
	"strings"
	"testing"

	"github.com/linerate/linerate/infra/aws/awsfake"
)

// Each fault a first run meets is found by the preflight, in its row of
// the table and in Err's one line; nothing is created and no mutating
// call is sent but as a dry run.
func TestPreflight(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		faults  awsfake.Faults
		edit    func(*Config)
		quota   float64 // 0: the fake's default
		allow   bool
		running int // c8gn.16xlarge instances already running
		// failed is the check that fails first ("": none), and what its
		// line says.
		failed string
		says   []string
		zones  []string
	}{
		{name: "all pass", zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}},
		{name: "one zone not offered", faults: awsfake.Faults{NotOffered: map[string][]string{"c8gn.16xlarge": {"us-east-1a"}}},
			zones: []string{"us-east-1b", "us-east-1c"}},
		{name: "type not offered in the campaign's zone", edit: func(c *Config) { c.Zones = []string{"us-east-1a"} },
			faults: awsfake.Faults{NotOffered: map[string][]string{"c8gn.16xlarge": {"us-east-1a"}}},
			failed: "zones", says: []string{"not offered in us-east-1a", "offered in: us-east-1b, us-east-1c"}},
		{name: "missing permission, decoded", faults: awsfake.Faults{Deny: map[string]bool{"ec2:RunInstances": true}},
			failed: "ec2:RunInstances", says: []string{"not allowed: ec2:RunInstances on arn:aws:ec2:", "linerate infra aws policy"},
			zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}},
		{name: "missing permission, no decoding", faults: awsfake.Faults{Deny: map[string]bool{"ec2:CreateTags": true, "sts:DecodeAuthorizationMessage": true}},
			failed: "ec2:CreateTags", says: []string{"not allowed: ec2:CreateTags; the encoded message below", "aws sts decode-authorization-message"},
			zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}},
		{name: "quota short", quota: 64, failed: "vCPU quota",
			says:  []string{"L-1216C47A in us-east-1 is 64, 0 already running: 64 left", "2 × 64 = 128", "at least 128", "https://us-east-1.console.aws.amazon.com/servicequotas/home/services/ec2/quotas/L-1216C47A"},
			zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}},
		{name: "quota short by what runs", quota: 192, running: 2, failed: "vCPU quota",
			says:  []string{"is 192, 128 already running: 64 left", "at least 256"},
			zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}},
		{name: "offerings denied, no decoding", faults: awsfake.Faults{Deny: map[string]bool{"ec2:DescribeInstanceTypeOfferings": true, "sts:DecodeAuthorizationMessage": true}},
			failed: "zones", says: []string{"not allowed: ec2:DescribeInstanceTypeOfferings; the encoded message"}},
		{name: "quota not readable", faults: awsfake.Faults{Deny: map[string]bool{"servicequotas:GetServiceQuota": true}},
			failed: "vCPU quota", says: []string{"not allowed: servicequotas:GetServiceQuota"},
			zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}},
		{name: "AMI of another architecture", faults: awsfake.Faults{ImageArch: map[string]string{"ami-0a1b2c3d4e5f60001": "x86_64"}},
			failed: "image", says: []string{"ami-0a1b2c3d4e5f60001 is x86_64, but c8gn.16xlarge is arm64"},
			zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}},
		{name: "slower link", edit: func(c *Config) { c.LinkGbps = 400 }, failed: "network performance",
			says:  []string{"states 200 Gigabit, below the campaign's link-gbps 400", "--allow-slower-link"},
			zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}},
		{name: "slower link allowed", edit: func(c *Config) { c.LinkGbps = 400 }, allow: true,
			zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}},
		{name: "link as fast", edit: func(c *Config) { c.LinkGbps = 200 },
			zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}},
		{name: "dry run checks what up creates first", faults: awsfake.Faults{DryRunChecksExistence: true},
			says:  []string{"allowed (dry run); asked without the placement group, key pair and security group, which up creates first (InvalidPlacementGroup.Unknown)"},
			zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}},
		{name: "dry run checks what up creates first, launch denied", faults: awsfake.Faults{DryRunChecksExistence: true, Deny: map[string]bool{"ec2:RunInstances": true}},
			failed: "ec2:RunInstances", says: []string{"not allowed: ec2:RunInstances on"},
			zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := awsfake.New()
			defer f.Close()
			f.Faults = tc.faults
			if tc.quota > 0 {
				f.Quotas[awsfake.DefaultQuotaCode] = tc.quota
			}
			for i := 0; i < tc.running; i++ {
				f.Add(awsfake.Resource{Kind: "instance", State: "running", InstanceType: "c8gn.16xlarge", Zone: "us-east-1a"})
			}
			before := len(f.All())
			p := newProvider(t, f, tc.edit)
			r := p.Preflight(context.Background(), PreflightOptions{Campaign: "pre", AllowSlowerLink: tc.allow})
			var text strings.Builder
			r.WriteText(&text)
			t.Logf("preflight:\n%s", text.String())
			err := r.Err()
			switch {
			case tc.failed == "" && err != nil:
				t.Fatalf("preflight failed: %v\n%s", err, text.String())
			case tc.failed != "" && err == nil:
				t.Fatalf("preflight passed, want %s to fail\n%s", tc.failed, text.String())
			case tc.failed != "":
				line := err.Error()
				if strings.Contains(line, "\n") || !strings.HasPrefix(line, "aws preflight: "+tc.failed+": ") {
					t.Errorf("error %q: want one line naming %s", line, tc.failed)
				}
			}
			for _, s := range tc.says {
				if !strings.Contains(text.String(), s) {
					t.Errorf("table lacks %q:\n%s", s, text.String())
				}
			}
			if strings.Join(r.Zones, ",") != strings.Join(tc.zones, ",") {
				t.Errorf("zones %v, want %v", r.Zones, tc.zones)
			}
			if n := len(f.All()); n != before {
				t.Errorf("the preflight created %d resources", n-before)
			}
			dry := map[string]bool{}
			for _, c := range f.CallsBy() {
				if awsfake.Mutating[c.Action] && !c.DryRun {
					t.Errorf("%s sent without DryRun", c.Action)
				}
				if c.DryRun {
					dry[c.Action] = true
				}
			}
			if tc.failed == "" {
				for a := range awsfake.Mutating {
					if a != "ImportKeyPair" && !dry[a] {
						t.Errorf("no dry run of %s", a)
					}
				}
			}
		})
	}
}

func TestStatedGbps(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]float64{
		"200 Gigabit": 200, "Up to 12.5 Gigabit": 12.5, "50 Gigabit": 50, "Moderate": 0, "": 0, "3x 200 Gigabit": 200,
	} {
		if got := StatedGbps(in); got != want {
			t.Errorf("StatedGbps(%q) = %g, want %g", in, got, want)
		}
	}
}

// An EC2 that cannot be reached is one failed check, and nothing else is
// asked.
func TestPreflightUnreachable(t *testing.T) {
	t.Parallel()
	f := awsfake.New()
	url := f.URL
	f.Close() // nothing listens there now
	p := newProvider(t, &awsfake.Fake{URL: url}, nil)
	r := p.Preflight(context.Background(), PreflightOptions{Campaign: "pre"})
	if len(r.Checks) != 1 || r.Checks[0].Name != "reach EC2" || r.Checks[0].Status != Fail {
		t.Fatalf("checks %+v, want one failed reach EC2", r.Checks)
	}
	if err := r.Err(); err == nil || !strings.HasPrefix(err.Error(), "aws preflight: reach EC2: ") {
		t.Errorf("Err() = %v", err)
	}
}
