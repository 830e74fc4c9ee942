package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/aws"
	"github.com/linerate/linerate/infra/sshhost"
	"github.com/linerate/linerate/sweeps/session"
)

func init() {
	register(command{name: "infra", summary: "bring a host pair up or down (local, netns, ssh, aws); gc leftovers", run: runInfra})
}

const infraUsage = `Usage: linerate infra <up|down|status|gc> [flags]

Brings up the pair of hosts a campaign runs on (a server host and a client
host) and takes it down. Providers:
  local  both roles on this host, over loopback
  netns  two network namespaces joined by a veth pair, 198.18.0.1 <-> 198.18.0.2 (root)
  ssh    two hosts you already have; host keys pinned in <dir>/known_hosts
  aws    two EC2 instances in one cluster placement group (costs money: the
         hourly price is shown and confirmed first; a dead-man shutdown ends
         a forgotten pair)
The pair stays up until "infra down"; "infra gc" removes what crashed runs
left behind (netns namespaces of dead processes; AWS resources whose
owner's lease has run out: a running linerate renews the lease of what it
made every few minutes, a pair kept up with "infra up" holds it until its
dead-man shutdown). gc lists every owner with its lease before removing.

Examples:
  sudo linerate infra up --provider netns --campaign local --queues 2
  linerate infra status --campaign local
  sudo linerate infra down --campaign local
  linerate infra up --provider ssh --campaign lab --server ec2-user@10.0.0.1 \
      --client ec2-user@10.0.0.2 --key ~/.ssh/lab
  linerate infra up --provider aws --campaign study --instance-type c8gn.16xlarge \
      --region us-east-1 --profile lab --ssh-from 203.0.113.7/32 --hourly-usd 3.5
  linerate infra gc --provider aws --region us-east-1 --profile lab --dry-run

State of a pair that is up: <dir>/infra.json (default dir runs/<campaign>).

Flags:
`

type infraFlags struct {
	provider, campaign, dir string
	queues                  int
	// ssh
	server, client, key, dist string
	// aws
	instanceType, region, profile, zones, sshFrom, pubKey, privKey, endpoint string
	keysEnv, yes, dryRun, sshFromWide                                        bool
	deadMan, sshTimeout                                                      time.Duration
	hourly                                                                   float64
}

func runInfra(ctx context.Context, args []string) int {
	fs := pflag.NewFlagSet("infra", pflag.ContinueOnError)
	fs.SortFlags = false
	var f infraFlags
	fs.StringVar(&f.provider, "provider", "", "up: local, netns, ssh or aws; gc: netns or aws only (default both)")
	fs.StringVar(&f.campaign, "campaign", "", "campaign ID: names and tags everything created")
	fs.StringVar(&f.dir, "dir", "", "campaign directory for state, keys and known_hosts (default runs/<campaign>)")
	fs.IntVar(&f.queues, "queues", 0, "netns: rx and tx queues of each veth end (default 1)")
	fs.StringVar(&f.server, "server", "", "ssh: the server host, user@host[:port]")
	fs.StringVar(&f.client, "client", "", "ssh: the client host, user@host[:port]")
	fs.StringVar(&f.key, "key", "", "ssh: private key file for both hosts")
	fs.StringVar(&f.dist, "dist", "dist", "ssh, aws: directory with linerate-linux-amd64/arm64 (make dist)")
	fs.StringVar(&f.instanceType, "instance-type", "", "aws: instance type of both hosts, e.g. c8gn.16xlarge")
	fs.StringVar(&f.region, "region", "", "aws: region (required; never guessed)")
	fs.StringVar(&f.profile, "profile", "", "aws: shared-config profile with the credentials")
	fs.BoolVar(&f.keysEnv, "access-keys-from-env", false, "aws: take AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and (temporary credentials) AWS_SESSION_TOKEN from the environment instead of a profile")
	fs.StringVar(&f.zones, "zones", "", "aws: zones to try in order, comma-separated (default every zone of the region)")
	fs.StringVar(&f.sshFrom, "ssh-from", "", "aws: the only address admitted to SSH, e.g. 203.0.113.7/32 (yours)")
	fs.BoolVar(&f.sshFromWide, "ssh-from-wide", false, "aws: admit an --ssh-from wider than /24 (IPv4) or /56 (IPv6)")
	fs.StringVar(&f.pubKey, "public-key", "", "aws: import this public key (with --private-key); default create a key pair")
	fs.StringVar(&f.privKey, "private-key", "", "aws: private half of --public-key")
	fs.DurationVar(&f.deadMan, "dead-man", 4*time.Hour, "aws: instances shut down (and terminate) this long after boot, whatever happens")
	fs.Float64Var(&f.hourly, "hourly-usd", 0, "aws: on-demand price of one instance per hour, for the cost prompt (default: asked of the Price List API)")
	fs.BoolVar(&f.yes, "yes", false, "aws: launch without asking")
	fs.DurationVar(&f.sshTimeout, "ssh-timeout", 5*time.Minute, "aws: how long to wait for SSH on the new instances")
	fs.StringVar(&f.endpoint, "endpoint", "", "aws: endpoint URL instead of AWS's (a local fake, for testing)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "gc: only list what would be removed and why")
	fs.Usage = func() { fmt.Fprint(os.Stderr, infraUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "linerate infra: %v (see linerate infra --help)\n", err)
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "linerate infra: want one of up, down, status, gc (see linerate infra --help)")
		return 2
	}
	if f.dir == "" && f.campaign != "" {
		f.dir = filepath.Join("runs", f.campaign)
	}
	op := operator(aws.Access{Region: f.region, Profile: f.profile, Endpoint: f.endpoint}, f.keysEnv, f.yes)
	op.SSHFromWide, op.SSHTimeout = f.sshFromWide, f.sshTimeout
	tbl := session.Default()
	switch fs.Arg(0) {
	case "up":
		return infraUp(ctx, tbl, f, op)
	case "down":
		if f.campaign == "" {
			return usageErr("down: --campaign is required")
		}
		st, err := tbl.Down(ctx, f.dir, f.campaign, &op)
		if err != nil {
			return failed(ctx, "infra", err)
		}
		fmt.Printf("%s pair of campaign %s is down\n", st.Kind, st.Campaign)
		return 0
	case "status":
		tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		defer tw.Flush()
		if err := tbl.Status(ctx, f.campaign, f.dir, &op, tw); err != nil {
			return failed(ctx, "infra", err)
		}
		return 0
	case "gc":
		ok, err := tbl.GC(ctx, f.provider, f.dryRun, &op, os.Stdout)
		if err != nil {
			if code := failed(ctx, "infra", err); code == 2 {
				return code
			}
		}
		if !ok {
			return 1
		}
		return 0
	}
	fmt.Fprintf(os.Stderr, "linerate infra: unknown action %q: want up, down, status or gc\n", fs.Arg(0))
	return 2
}

func usageErr(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "linerate infra: "+format+"\n", args...)
	return 2
}

// infraUp brings a pair up from the flags; it stays up until infra down.
func infraUp(ctx context.Context, tbl *session.Table, f infraFlags, op session.Operator) int {
	if f.campaign == "" {
		return usageErr("up: --campaign is required")
	}
	spec := infra.Spec{Campaign: f.campaign, Dir: f.dir, Queues: f.queues}
	if err := spec.Validate(); err != nil {
		return usageErr("up: --%s", strings.TrimPrefix(err.Error(), "spec "))
	}
	if f.sshFrom != "" {
		pfx, err := netip.ParsePrefix(f.sshFrom)
		if err != nil {
			return usageErr("up: --ssh-from %q: want a CIDR such as 203.0.113.7/32", f.sshFrom)
		}
		op.SSHFrom = pfx
	}
	// The provider's settings, from the flags named as its settings are.
	settings, _ := tbl.NewSettings(f.provider)
	switch s := settings.(type) {
	case *sshhost.Settings:
		if f.server == "" || f.client == "" || f.key == "" {
			return usageErr("up: the ssh provider needs --server, --client and --key")
		}
		*s = sshhost.Settings{Server: sshhost.Target{Address: f.server}, Client: sshhost.Target{Address: f.client}, Key: f.key, Dist: f.dist}
	case *aws.Settings:
		*s = aws.Settings{InstanceType: f.instanceType, Region: f.region, PublicKey: f.pubKey, PrivateKey: f.privKey,
			DeadMan: f.deadMan, HourlyUSD: f.hourly, Dist: f.dist}
		if f.zones != "" {
			s.Zones = strings.Split(f.zones, ",")
		}
	}
	up, err := tbl.Up(ctx, f.provider, settings, spec, &op)
	if err != nil {
		return failed(ctx, "infra", err)
	}
	fmt.Printf("%s pair up for campaign %s\n", up.Kind, f.campaign)
	for _, h := range up.Hosts {
		fmt.Printf("  %-8s %-16s %s\n", h.Name, h.Addr, h.How)
	}
	if !up.Stays {
		// Nothing was created; no state to keep beyond the record.
		fmt.Println("(nothing to take down for this provider; infra down only forgets it)")
	}
	return 0
}
