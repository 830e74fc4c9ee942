package aws

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/infra/aws/awsfake"
)

// The policy grants exactly what linerate uses: everything the fake
// served during a preflight (one with a denial to decode), an up and
// down with a created key and one with an imported key, a gc of a
// crashed owner and a price look-up is in it, and nothing else is.
func TestPolicyIsWhatIsUsed(t *testing.T) {
	f := awsfake.New()
	defer f.Close()
	ctx := context.Background()
	pub := filepath.Join(t.TempDir(), "lab.pub")
	if err := os.WriteFile(pub, []byte("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeFakeFakeFakeFakeFakeFakeFakeFakeFakeFake test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	created := newProvider(t, f, nil)
	if err := created.Preflight(ctx, PreflightOptions{Campaign: "policy"}).Err(); err != nil {
		t.Fatal(err)
	}
	f.SetFaults(func(fl *awsfake.Faults) { fl.Deny = map[string]bool{"ec2:TerminateInstances": true} })
	if err := created.Preflight(ctx, PreflightOptions{Campaign: "policy"}).Err(); err == nil || !strings.Contains(err.Error(), "ec2:TerminateInstances on") {
		t.Fatalf("a denial decoded: %v", err)
	}
	f.SetFaults(func(fl *awsfake.Faults) { fl.Deny = nil })
	if _, err := created.Up(ctx, spec(t)); err != nil {
		t.Fatal(err)
	}
	// During the run: the lease renewed, as every Renew.
	if err := created.renew(ctx, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := created.Down(ctx); err != nil {
		t.Fatal(err)
	}
	imported := newProvider(t, f, func(c *Config) { c.PublicKeyFile, c.PrivateKeyFile = pub, pub+".key" })
	if err := imported.Preflight(ctx, PreflightOptions{Campaign: "policy"}).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := imported.Up(ctx, spec(t)); err != nil {
		t.Fatal(err)
	}
	imported.stopRenewing() // its coordinator is gone; gc collects its pair once the lease has run out
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	for _, r := range f.Live() {
		f.Retag(r.ID, map[string]string{TagLease: past})
	}
	acct, err := OpenAccount(ctx, testConfig(f))
	if err != nil {
		t.Fatal(err)
	}
	claims, err := acct.Claims(ctx, "")
	if err != nil || len(claims) != 1 {
		t.Fatalf("claims %+v, %v; want the crashed owner's", claims, err)
	}
	if err := acct.Collect(ctx, claims[0]); err != nil {
		t.Fatal(err)
	}
	assertNothingLive(t, f, "after gc")
	pr, err := PricingClient(ctx, testConfig(f).Access)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := HourlyPrice(ctx, pr, "c8gn.16xlarge", "us-east-1"); err != nil {
		t.Fatal(err)
	}

	used := map[string]bool{}
	for _, a := range f.IAMActions() {
		used[a] = true
	}
	granted := map[string]bool{}
	for _, a := range Policy("us-east-1").Actions() {
		granted[a] = true
		if !used[a] {
			t.Errorf("the policy grants %s, which nothing used", a)
		}
	}
	for a := range used {
		if !granted[a] {
			t.Errorf("linerate used %s, which the policy lacks", a)
		}
	}
}

// The policy is valid JSON of IAM's shape, scoped to the region given,
// and every change it allows is conditioned on linerate's tags.
func TestPolicyShape(t *testing.T) {
	t.Parallel()
	var doc PolicyDocument
	if err := json.Unmarshal(Policy("eu-west-1").JSON(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Version != "2012-10-17" || len(doc.Statement) == 0 {
		t.Fatalf("policy %+v", doc)
	}
	for _, s := range doc.Statement {
		for _, r := range s.Resource {
			if strings.HasPrefix(r, "arn:aws:ec2:") && !strings.HasPrefix(r, "arn:aws:ec2:eu-west-1:") {
				t.Errorf("%s: resource %s outside eu-west-1", s.Sid, r)
			}
		}
		for _, a := range s.Action {
			changes := strings.HasPrefix(a, "ec2:Delete") || a == "ec2:TerminateInstances" || a == "ec2:AuthorizeSecurityGroupIngress" || a == "ec2:CreateTags"
			if changes && len(s.Condition) == 0 {
				t.Errorf("%s: %s allowed without a tag condition", s.Sid, a)
			}
		}
	}
	if all := string(Policy("").JSON()); !strings.Contains(all, `"arn:aws:ec2:*:*:instance/*"`) {
		t.Errorf("no region: want every region's ARNs:\n%s", all)
	}
}

// docs/aws.md shows the policy `linerate infra aws policy` prints (no
// region: every region's), byte for byte.
func TestPolicyInDocs(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docs/aws.md")
	if err != nil {
		t.Fatal(err)
	}
	const mark = "<!-- the output of: linerate infra aws policy -->\n```json\n"
	_, rest, ok := strings.Cut(string(b), mark)
	doc, _, closed := strings.Cut(rest, "```")
	if !ok || !closed {
		t.Fatalf("docs/aws.md has no block after %q", mark)
	}
	if want := string(Policy("").JSON()); doc != want {
		t.Errorf("docs/aws.md's policy differs from linerate infra aws policy; paste its output:\n%s", want)
	}
}
