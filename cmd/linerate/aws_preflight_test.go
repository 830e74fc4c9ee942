package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/linerate/linerate/infra/aws/awsfake"
)

// `sweep run` against the fake with each fault a first run meets: it
// stops before anything is launched or created, its last line naming the
// cause, exit 2; with no capacity in the first zone it goes on in the
// next. Nothing is left in the fake's ledger either way.
func TestSweepRunPreflightFaults(t *testing.T) {
	fakeEnv(t, "AKIDPREFLIGHT")
	cases := []struct {
		name  string
		fault func(*awsfake.Fake)
		extra string // provider settings
		// last is what stderr's last line holds ("" for the capacity
		// case, which goes on); says what stderr holds besides.
		last string
		says []string
	}{
		{name: "missing permission", fault: func(f *awsfake.Fake) { f.Faults.Deny = map[string]bool{"ec2:RunInstances": true} },
			last: "aws preflight: ec2:RunInstances: not allowed: ec2:RunInstances"},
		{name: "quota short", fault: func(f *awsfake.Fake) { f.Quotas[awsfake.DefaultQuotaCode] = 96 },
			last: "aws preflight: vCPU quota: the On-Demand vCPU quota L-1216C47A in us-east-1 is 96",
			says: []string{"servicequotas/home/services/ec2/quotas/L-1216C47A"}},
		{name: "type not offered", extra: ", zones: [us-east-1a]",
			fault: func(f *awsfake.Fake) { f.Faults.NotOffered = map[string][]string{"c8gn.16xlarge": {"us-east-1a"}} },
			last:  "aws preflight: zones: c8gn.16xlarge is not offered in us-east-1a"},
		{name: "AMI arch mismatch", fault: func(f *awsfake.Fake) { f.Faults.ImageArch = map[string]string{"ami-0a1b2c3d4e5f60001": "x86_64"} },
			last: "aws preflight: image: ami-0a1b2c3d4e5f60001 is x86_64, but c8gn.16xlarge is arm64"},
		{name: "slower link", extra: ", link-gbps: 400",
			last: "aws preflight: network performance: c8gn.16xlarge states 200 Gigabit, below the campaign's link-gbps 400"},
		{name: "no capacity in zone a", extra: ", zones: [us-east-1a, us-east-1b]",
			fault: func(f *awsfake.Fake) { f.Faults.NoCapacityZones = []string{"us-east-1a"} },
			says: []string{"c8gn.16xlarge in us-east-1a: InsufficientInstanceCapacity; trying the next zone",
				"aws: a placement group linerate-cli-aws-check-r", "-us-east-1b in us-east-1b", "in us-east-1b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := awsfake.New()
			defer f.Close()
			if tc.fault != nil {
				tc.fault(f)
			}
			camp := awsCampaign(t, ", ssh-from: 203.0.113.7/32"+tc.extra, "1s")
			code, _, stderr := linerate(t, "", "", "sweep", "run", camp, "--out", filepath.Join(t.TempDir(), "run"),
				"--yes", "--access-keys-from-env", "--aws-endpoint", f.URL)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			last := lines[len(lines)-1]
			for _, s := range tc.says {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
			if tc.last != "" {
				if code != 2 || !strings.HasPrefix(last, "linerate sweep run: "+tc.last) {
					t.Errorf("exit %d, last line %q; want 2 and %q\n%s", code, last, tc.last, stderr)
				}
				if n := len(f.All()); n > 0 {
					t.Errorf("the preflight failed, but %d resources were created", n)
				}
				for _, c := range f.CallsBy() {
					if awsfake.Mutating[c.Action] && !c.DryRun {
						t.Errorf("%s sent for real before the preflight passed", c.Action)
					}
				}
			} else {
				var zones []string
				for _, r := range f.All() {
					if r.Kind == "instance" {
						zones = append(zones, r.Zone)
					}
				}
				if strings.Join(zones, ",") != "us-east-1b,us-east-1b" {
					t.Errorf("instances launched in %v, want both in us-east-1b\n%s", zones, stderr)
				}
			}
			if live := f.Live(); len(live) > 0 {
				t.Errorf("%d resources left in the ledger: %+v", len(live), live)
			}
		})
	}
}

// `infra preflight` prints the table and exits 0 when every check
// passes, 2 when one fails; `sweep plan` runs it after the plan only
// when given credentials.
func TestInfraPreflightAndPlan(t *testing.T) {
	fakeEnv(t, "AKIDPREFLIGHTCLI")
	f := awsfake.New()
	defer f.Close()
	camp := awsCampaign(t, ", ssh-from: 203.0.113.7/32", "1s")
	code, stdout, stderr := linerate(t, "", "", "infra", "preflight", camp, "--access-keys-from-env", "--endpoint", f.URL)
	if code != 0 || !strings.Contains(stdout, "vCPU quota") || !strings.Contains(stdout, "ec2:RunInstances") || strings.Contains(stdout, "FAIL") {
		t.Errorf("infra preflight: exit %d\n%s\n%s", code, stdout, stderr)
	}
	f.SetFaults(func(fl *awsfake.Faults) { fl.Deny = map[string]bool{"ec2:TerminateInstances": true} })
	code, stdout, stderr = linerate(t, "", "", "infra", "preflight", camp, "--access-keys-from-env", "--endpoint", f.URL)
	if code != 2 || !strings.Contains(stdout, "ec2:TerminateInstances") || !strings.Contains(stderr, "aws preflight: ec2:TerminateInstances: not allowed") {
		t.Errorf("infra preflight, TerminateInstances denied: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// infra up stops at the same check, before its state file or anything
	// in the account is made.
	dir := filepath.Join(t.TempDir(), "pair")
	code, _, stderr = linerate(t, "", "", "infra", "up", "--provider", "aws", "--campaign", "pre", "--dir", dir, "--instance-type", "c8gn.16xlarge",
		"--region", "us-east-1", "--access-keys-from-env", "--endpoint", f.URL, "--ssh-from", "203.0.113.7/32", "--yes")
	if code != 2 || !strings.Contains(stderr, "linerate infra: up: aws preflight: ec2:TerminateInstances: not allowed") {
		t.Errorf("infra up, TerminateInstances denied: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "infra.json")); !os.IsNotExist(err) {
		t.Errorf("infra.json after a failed preflight: %v", err)
	}
	before := len(f.CallsBy())
	code, stdout, stderr = linerate(t, "", "", "sweep", "plan", camp)
	if code != 0 || len(f.CallsBy()) != before || strings.Contains(stdout, "preflight") {
		t.Errorf("sweep plan without credentials: exit %d, %d calls to AWS\n%s\n%s", code, len(f.CallsBy())-before, stdout, stderr)
	}
	code, stdout, stderr = linerate(t, "", "", "sweep", "plan", camp, "--access-keys-from-env", "--aws-endpoint", f.URL)
	if code != 2 || !strings.Contains(stdout, "aws preflight of 2 × c8gn.16xlarge") || !strings.Contains(stderr, "ec2:TerminateInstances") {
		t.Errorf("sweep plan with credentials: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if n := len(f.All()); n > 0 {
		t.Errorf("%d resources created", n)
	}
}
