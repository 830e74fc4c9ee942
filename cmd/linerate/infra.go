package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/linerate/linerate/sweeps/session"
)

// Flag help that infra and sweep run or soak share.
const (
	profileHelp  = "shared-config profile with the credentials"
	keysEnvHelp  = "take AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and (temporary credentials) AWS_SESSION_TOKEN from the environment"
	sshFromHelp  = "the only address admitted to SSH, e.g. 203.0.113.7/32"
	wideHelp     = " wider than /24 (IPv4) or /56 (IPv6)"
	endpointHelp = "endpoint URL instead of AWS's (a local fake, for testing)"
)

func newInfra() *cobra.Command {
	return completeFlags(completeArgs(command(helpText("infra"), "bring a host pair up or down (local, netns, ssh, aws); gc leftovers", bindInfra), infraArgs), map[string]cobra.CompletionFunc{
		"provider": words("local", "netns", "ssh", "aws"),
		"profile":  awsProfiles,
		"dir":      runDir,
		"dist":     runDir,
	})
}

// infraRun is one infra command line: its flags, then its action.
type infraRun struct {
	c           *cli
	f           session.UpFlags
	op          session.Operator
	yes, dryRun bool
}

const infraWant = "want one of up, down, status, gc, preflight CAMPAIGN, or aws policy [CAMPAIGN]"

func bindInfra(c *cli) func(context.Context) int {
	r := &infraRun{c: c}
	r.bind()
	return r.run
}

func (r *infraRun) bind() {
	c, f, op := r.c, &r.f, &r.op
	c.StringVar(&f.Kind, "provider", "", "up: local, netns, ssh or aws; gc: netns or aws only (default both)")
	c.StringVar(&f.Spec.Campaign, "campaign", "", "campaign ID: names and tags everything created")
	c.StringVar(&f.Spec.Dir, "dir", "", "campaign directory for state, keys and known_hosts (default runs/<campaign>)")
	c.IntVar(&f.Spec.Queues, "queues", 0, "netns: rx and tx queues of each veth end (default 1)")
	c.StringVar(&f.SSH.Server.Address, "server", "", "ssh: the server host, user@host[:port]")
	c.StringVar(&f.SSH.Client.Address, "client", "", "ssh: the client host, user@host[:port]")
	c.StringVar(&f.SSH.Key, "key", "", "ssh: private key file for both hosts")
	c.StringVar(&f.Dist, "dist", "dist", "ssh, aws: directory with linerate-linux-amd64/arm64 (make dist)")
	c.StringVar(&f.AWS.InstanceType, "instance-type", "", "aws: instance type of both hosts, e.g. c8gn.16xlarge")
	c.StringVar(&op.AWS.Region, "region", "", "aws: region (required; never guessed)")
	c.StringVar(&op.AWS.Profile, "profile", "", "aws: "+profileHelp)
	c.BoolVar(&op.KeysFromEnv, "access-keys-from-env", false, "aws: "+keysEnvHelp+" instead of a profile")
	c.StringVar(&f.Zones, "zones", "", "aws: zones to try in order, comma-separated (default every zone of the region; zones that do not offer the type are skipped)")
	c.StringVar(&f.SSHFrom, "ssh-from", "", "aws: "+sshFromHelp+" (yours)")
	c.BoolVar(&op.SSHFromWide, "ssh-from-wide", false, "aws: admit an --ssh-from"+wideHelp)
	c.StringVar(&f.AWS.PublicKey, "public-key", "", "aws: import this public key (with --private-key); default create a key pair")
	c.StringVar(&f.AWS.PrivateKey, "private-key", "", "aws: private half of --public-key")
	c.DurationVar(&f.AWS.DeadMan, "dead-man", 4*time.Hour, "aws: instances shut down (and terminate) this long after boot, whatever happens")
	c.Float64Var(&f.AWS.HourlyUSD, "hourly-usd", 0, "aws: on-demand price of one instance per hour, for the cost prompt (default: asked of the Price List API)")
	c.BoolVar(&r.yes, "yes", false, "aws: launch without asking")
	c.DurationVar(&op.SSHTimeout, "ssh-timeout", 5*time.Minute, "aws: how long to wait for SSH on the new instances")
	c.StringVar(&op.AWS.Endpoint, "endpoint", "", "aws: "+endpointHelp)
	c.BoolVar(&r.dryRun, "dry-run", false, "gc: only list what would be removed and why")
	c.BoolVar(&op.AllowSlowerLink, "allow-slower-link", false, "aws: pass an instance type whose stated network performance is below the campaign's link-gbps")
	c.Float64Var(&f.AWS.LinkGbps, "link-gbps", 0, "aws up: the link expected, in Gbps; the preflight refuses a type that states less")
}

// argsFit says whether the arguments fit the action they name.
func (r *infraRun) argsFit() bool {
	switch n, c := r.c.NArg(), r.c; c.Arg(0) {
	case "preflight":
		return n == 2
	case "aws":
		return n >= 2 && c.Arg(1) == "policy"
	}
	return r.c.NArg() == 1
}

func (r *infraRun) run(ctx context.Context) int {
	c := r.c
	if code, done := c.want(1, 3, infraWant); done {
		return code
	} else if !r.argsFit() {
		return c.usage("%s", infraWant)
	}
	r.f.Spec.Dir = session.RunDir(r.f.Spec.Dir, r.f.Spec.Campaign)
	r.op.Console(os.Stdin, os.Stderr, r.yes)
	c.input, c.stopped = is[*session.InputError], ctx
	return r.act(ctx, session.Default())
}

// act does the action the first argument names.
func (r *infraRun) act(ctx context.Context, tbl *session.Table) int {
	c, f, op := r.c, &r.f, &r.op
	switch c.Arg(0) {
	case "up":
		up, err := tbl.UpFromFlags(ctx, *f, op)
		if err != nil {
			return c.end(err)
		}
		up.WriteText(os.Stdout)
	case "down":
		st, err := tbl.Down(ctx, f.Spec.Dir, f.Spec.Campaign, op)
		if err != nil {
			return c.end(err)
		}
		fmt.Printf("%s pair of campaign %s is down\n", st.Kind, st.Campaign)
	case "status":
		if err := tbl.Status(ctx, f.Spec.Campaign, f.Spec.Dir, op, os.Stdout); err != nil {
			return c.end(err)
		}
	case "preflight":
		camp, err := tbl.Load(c.Arg(1))
		if err != nil {
			return c.bad("%v", err)
		}
		if op.SSHFrom, err = session.ParseSSHFrom(f.SSHFrom); err != nil {
			return c.end(err)
		}
		if err := tbl.Preflight(ctx, camp, op, os.Stdout); err != nil {
			return c.end(err)
		}
	case "aws":
		b, err := tbl.AWSPolicy(c.Arg(2), op.AWS.Region)
		if err != nil {
			return c.end(err)
		}
		os.Stdout.Write(b)
	case "gc":
		ok, err := tbl.GC(ctx, f.Kind, r.dryRun, op, os.Stdout)
		if err != nil && c.end(err) == 2 {
			return 2
		}
		if !ok {
			return 1
		}
	default:
		return c.bad("unknown action %q: want up, down, status, gc, preflight or aws", c.Arg(0))
	}
	return 0
}
