package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/aws"
	"github.com/linerate/linerate/infra/netns"
	"github.com/linerate/linerate/infra/sshhost"
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

// infraState is what "infra up" leaves for "infra down" and "status": no
// secrets, only where to look.
type infraState struct {
	Kind     string    `json:"kind"`
	Campaign string    `json:"campaign"`
	Region   string    `json:"region,omitempty"`
	Profile  string    `json:"profile,omitempty"`
	Owner    string    `json:"owner,omitempty"` // aws: the owner tag of what up made
	KeysEnv  bool      `json:"access_keys_from_env,omitempty"`
	Endpoint string    `json:"endpoint,omitempty"`
	Server   string    `json:"server,omitempty"`
	Client   string    `json:"client,omitempty"`
	Started  time.Time `json:"started"`
}

const infraStateFile = "infra.json"

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
	switch fs.Arg(0) {
	case "up":
		return infraUp(ctx, f)
	case "down":
		return infraDown(ctx, f)
	case "status":
		return infraStatus(ctx, f)
	case "gc":
		return infraGC(ctx, f)
	}
	fmt.Fprintf(os.Stderr, "linerate infra: unknown action %q: want up, down, status or gc\n", fs.Arg(0))
	return 2
}

func usageErr(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "linerate infra: "+format+"\n", args...)
	return 2
}

func (f infraFlags) access() aws.Access {
	return accessOf(f.region, f.profile, f.endpoint, f.keysEnv)
}

// accessOf is the AWS access named by flags or a state file, with the keys
// from the environment when it says so.
func accessOf(region, profile, endpoint string, keysEnv bool) aws.Access {
	a := aws.Access{Region: region, Profile: profile, Endpoint: endpoint}
	if keysEnv {
		a.KeysFromEnv()
	}
	return a
}

func infraUp(ctx context.Context, f infraFlags) int {
	if f.campaign == "" {
		return usageErr("up: --campaign is required")
	}
	spec := infra.Spec{Campaign: f.campaign, Dir: f.dir, Queues: f.queues}
	if err := spec.Validate(); err != nil {
		return usageErr("up: --%s", strings.TrimPrefix(err.Error(), "spec "))
	}
	st := infraState{Kind: f.provider, Campaign: f.campaign, Started: time.Now().UTC()}
	var p infra.Provider
	switch f.provider {
	case "local":
		p = netns.Local{}
	case "netns":
		p = &netns.Provider{Keep: f.campaign}
	case "ssh":
		if f.server == "" || f.client == "" || f.key == "" {
			return usageErr("up: the ssh provider needs --server, --client and --key")
		}
		sp, err := sshhost.FromSettings(map[string]any{"server": f.server, "client": f.client, "key": f.key, "dist": f.dist})
		if err != nil {
			return usageErr("up: %v", err)
		}
		p, st.Server, st.Client = sp, f.server, f.client
	case "aws":
		cfg := aws.Config{Access: f.access(), InstanceType: f.instanceType, PublicKeyFile: f.pubKey, SSHFromWide: f.sshFromWide,
			PrivateKeyFile: f.privKey, DeadMan: f.deadMan, HourlyUSD: f.hourly, Dist: f.dist, SSHTimeout: f.sshTimeout}
		if f.zones != "" {
			cfg.Zones = strings.Split(f.zones, ",")
		}
		if f.sshFrom != "" {
			pfx, err := netip.ParsePrefix(f.sshFrom)
			if err != nil {
				return usageErr("up: --ssh-from %q: want a CIDR such as 203.0.113.7/32", f.sshFrom)
			}
			cfg.SSHFrom = pfx
		}
		if err := cfg.Validate(); err != nil {
			return usageErr("up: %v", err)
		}
		// The clients first: a profile that does not load fails before
		// the price is asked for or the operator asked to pay it.
		ap, err := aws.New(ctx, cfg)
		if err != nil {
			fmt.Fprintf(os.Stderr, "linerate infra: %v\n", err)
			return 1
		}
		if err := aws.LookUpPrice(ctx, &cfg); err != nil {
			fmt.Fprintf(os.Stderr, "linerate infra: %v\n", err)
		}
		if !confirmCost(cfg, f.yes, os.Stdin, os.Stderr) {
			fmt.Fprintln(os.Stderr, "linerate infra: not launched")
			return 1
		}
		ap.Log = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
		p = ap
		st.Region, st.Profile, st.KeysEnv, st.Endpoint, st.Owner = f.region, f.profile, f.keysEnv, f.endpoint, ap.Owner()
	case "":
		return usageErr("up: --provider is required (local, netns, ssh or aws)")
	default:
		return usageErr("up: --provider %q: want local, netns, ssh or aws", f.provider)
	}
	if old, err := readState(f.dir); err == nil {
		fmt.Fprintf(os.Stderr, "linerate infra: up: a %s pair of campaign %s is already up (since %s); take it down first: linerate infra down --campaign %s\n",
			old.Kind, old.Campaign, old.Started.Format(time.RFC3339), f.campaign)
		return 1
	}
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "linerate infra: %v\n", err)
		return 1
	}
	// State first: a crash during Up still leaves "infra down" something to
	// read.
	if err := writeState(f.dir, st); err != nil {
		fmt.Fprintf(os.Stderr, "linerate infra: %v\n", err)
		return 1
	}
	pair, err := p.Up(ctx, spec)
	if err == nil {
		err = handOver(ctx, p)
	}
	if err != nil {
		// Providers tear down what they made before returning an error;
		// the state goes only when that worked, so "infra down" can retry.
		fmt.Fprintf(os.Stderr, "linerate infra: up: %v\n", err)
		if errors.Is(err, aws.ErrNotTornDown) {
			fmt.Fprintf(os.Stderr, "linerate infra: %s kept: linerate infra down --campaign %s --dir %s finishes the teardown\n", infraStateFile, f.campaign, f.dir)
		} else {
			os.Remove(filepath.Join(f.dir, infraStateFile))
		}
		if ctx.Err() != nil {
			return 130
		}
		return 1
	}
	fmt.Printf("%s pair up for campaign %s\n", p.Kind(), f.campaign)
	for _, h := range []infra.Host{pair.Server, pair.Client} {
		fmt.Printf("  %-8s %-16s %s\n", h.Name(), h.DataAddr(), describeHost(h))
		h.Close()
	}
	if f.provider == "local" || f.provider == "ssh" {
		// Nothing was created; no state to keep beyond the record.
		fmt.Println("(nothing to take down for this provider; infra down only forgets it)")
	}
	return 0
}

// handOver gives an aws pair to the operator: it outlives this process,
// so its lease runs to the dead-man deadline instead of being renewed.
// When that fails the pair is taken down, as any failed up.
func handOver(ctx context.Context, p infra.Provider) error {
	ap, ok := p.(*aws.Provider)
	if !ok {
		return nil
	}
	until, err := ap.HandOver(ctx)
	if err == nil {
		fmt.Fprintf(os.Stderr, "aws: the pair is yours until %s (its dead-man shutdown); infra gc leaves it alone until then\n", until.Local().Format(time.RFC3339))
		return nil
	}
	dctx, cancel := infra.TeardownContext(ctx)
	defer cancel()
	return errors.Join(err, p.Down(dctx))
}

func describeHost(h infra.Host) string {
	if n, ok := h.(*netns.Host); ok && n.Namespace != "" {
		return "ip netns exec " + n.Namespace + " …"
	}
	return ""
}

// confirmCost prints the pair's hourly price and asks; --yes skips asking.
func confirmCost(cfg aws.Config, yes bool, in io.Reader, out io.Writer) bool {
	price := "unknown (the Price List API did not say; give the on-demand price of one instance: --hourly-usd, or hourly-usd in a campaign's provider block)"
	if cfg.HourlyUSD > 0 {
		price = fmt.Sprintf("$%.2f per hour for the pair (2 × $%.4f)", 2*cfg.HourlyUSD, cfg.HourlyUSD)
	}
	dm := cfg.DeadManOrDefault()
	fmt.Fprintf(out, "About to launch 2 × %s in %s: %s.\nThey shut down by themselves after %v; \"linerate infra down --campaign …\" ends them sooner.\n",
		cfg.InstanceType, cfg.Region, price, dm)
	if yes {
		return true
	}
	fmt.Fprint(out, "Launch? [y/N] ")
	line, _ := bufio.NewReader(in).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}

func writeState(dir string, st infraState) error {
	b, _ := json.MarshalIndent(st, "", "  ")
	tmp := filepath.Join(dir, infraStateFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	return os.Rename(tmp, filepath.Join(dir, infraStateFile))
}

func readState(dir string) (infraState, error) {
	var st infraState
	b, err := os.ReadFile(filepath.Join(dir, infraStateFile))
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("%s: %w", filepath.Join(dir, infraStateFile), err)
	}
	return st, nil
}

func infraDown(ctx context.Context, f infraFlags) int {
	if f.campaign == "" {
		return usageErr("down: --campaign is required")
	}
	st, err := readState(f.dir)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(os.Stderr, "linerate infra: down: no %s in %s: nothing is up for campaign %s (infra gc finds leftovers)\n", infraStateFile, f.dir, f.campaign)
		return 1
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate infra: down: %v\n", err)
		return 1
	}
	// Down runs to the end even after Ctrl-C, within its own time limit.
	dctx, cancel := infra.TeardownContext(ctx)
	defer cancel()
	var p infra.Provider
	switch st.Kind {
	case "netns":
		p = &netns.Provider{Keep: st.Campaign}
	case "aws":
		if st.Owner == "" {
			fmt.Fprintf(os.Stderr, "linerate infra: down: %s names no owner (an older linerate wrote it); linerate infra gc --region %s removes its pair once its dead-man deadline has passed\n", filepath.Join(f.dir, infraStateFile), st.Region)
			return 1
		}
		ap, err := awsClient(dctx, accessOf(st.Region, st.Profile, st.Endpoint, st.KeysEnv))
		if err != nil {
			fmt.Fprintf(os.Stderr, "linerate infra: down: %v\n", err)
			return 1
		}
		p = ap.ForOwner(st.Campaign, st.Owner, f.dir)
	}
	if p != nil {
		if err := p.Down(dctx); err != nil {
			fmt.Fprintf(os.Stderr, "linerate infra: down: %v\n", err)
			return 1
		}
	}
	os.Remove(filepath.Join(f.dir, infraStateFile))
	fmt.Printf("%s pair of campaign %s is down\n", st.Kind, st.Campaign)
	return 0
}

func infraStatus(ctx context.Context, f infraFlags) int {
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	defer tw.Flush()
	if f.campaign != "" {
		st, err := readState(f.dir)
		switch {
		case errors.Is(err, os.ErrNotExist):
			fmt.Fprintf(tw, "campaign %s: no pair up (no %s in %s)\n", f.campaign, infraStateFile, f.dir)
		case err != nil:
			fmt.Fprintf(os.Stderr, "linerate infra: status: %v\n", err)
			return 1
		default:
			fmt.Fprintf(tw, "campaign %s: %s pair up since %s\n", st.Campaign, st.Kind, st.Started.Format(time.RFC3339))
			if st.Kind == "aws" && f.region == "" {
				f.region, f.profile, f.keysEnv, f.endpoint = st.Region, st.Profile, st.KeysEnv, st.Endpoint
			}
		}
	}
	if names, err := netns.Owned(); err == nil && len(names) > 0 {
		left, _ := netns.Leftovers()
		dead := map[string]bool{}
		for _, l := range left {
			dead[l.Name] = true
		}
		fmt.Fprintln(tw, "\nnetns namespaces\tstate")
		for _, n := range names {
			s := "in use"
			if dead[n] {
				s = "leftover (its process is gone)"
			}
			fmt.Fprintf(tw, "%s\t%s\n", n, s)
		}
	}
	if f.region != "" {
		ap, err := awsClient(ctx, f.access())
		if err != nil {
			fmt.Fprintf(os.Stderr, "linerate infra: status: %v\n", err)
			return 1
		}
		res, err := ap.Resources(ctx, aws.Selector{Campaign: f.campaign})
		if err != nil {
			fmt.Fprintf(os.Stderr, "linerate infra: status: %v\n", err)
			return 1
		}
		fmt.Fprintf(tw, "\naws %s\towner\tkind\tid\tname\tstate\tlease until\tdead-man at\n", f.region)
		for _, r := range res {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Campaign, r.Owner, r.Kind, r.ID, r.Name, r.State, stamp(r.Lease), stamp(r.Deadline))
		}
		if len(res) == 0 {
			fmt.Fprintln(tw, "(nothing tagged by linerate)")
		}
	}
	return 0
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format(time.RFC3339)
}

// awsClient is a provider for listing and removing what exists (down,
// status, gc), not for bringing a pair up.
func awsClient(ctx context.Context, a aws.Access) (*aws.Provider, error) {
	ap, err := aws.New(ctx, aws.Config{Access: a, InstanceType: "unused.listing", SSHFrom: netip.MustParsePrefix("127.0.0.1/32")})
	if err != nil {
		return nil, err
	}
	ap.Log = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	return ap, nil
}

func infraGC(ctx context.Context, f infraFlags) int {
	dctx, cancel := infra.TeardownContext(ctx)
	defer cancel()
	rc := 0
	switch f.provider {
	case "", "netns", "aws":
	default:
		return usageErr("gc: --provider %q: want netns or aws (default both)", f.provider)
	}
	var left []netns.Leftover
	var err error
	if f.provider != "aws" {
		left, err = netns.Leftovers()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate infra: gc: %v\n", err)
		rc = 1
	}
	for _, l := range left {
		fmt.Printf("netns %s (process %d gone): ", l.Name, l.PID)
		if f.dryRun {
			fmt.Println("would remove")
		}
	}
	if !f.dryRun && len(left) > 0 {
		done, err := netns.Cleanup(dctx)
		fmt.Printf("removed %d\n", len(done))
		if err != nil {
			fmt.Fprintf(os.Stderr, "linerate infra: gc: %v\n", err)
			rc = 1
		}
	}
	if f.provider == "netns" {
		return rc
	}
	if f.region == "" {
		fmt.Println("aws: skipped (give --region and --profile to collect AWS leftovers)")
		return rc
	}
	ap, err := awsClient(dctx, f.access())
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate infra: gc: %v\n", err)
		return 1
	}
	// Owners, not campaign names or local files, decide: whatever machine
	// or directory a run was started from, it renews its lease while it
	// runs. Everything is listed with the reason before anything goes.
	claims, err := ap.Claims(dctx, "")
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate infra: gc: %v\n", err)
		return 1
	}
	if len(claims) == 0 {
		fmt.Println("aws: nothing tagged by linerate")
		return rc
	}
	now := time.Now()
	var expired []aws.Claim
	for _, c := range claims {
		verdict := "keep"
		if c.Expired(now) {
			verdict = "remove"
			if f.dryRun {
				verdict = "would remove"
			}
			expired = append(expired, c)
		}
		fmt.Printf("aws owner %s, campaign %s, %d resources: %s: %s\n", ownerName(c), c.Campaign, len(c.Resources), c.Why(now), verdict)
		for _, r := range c.Resources {
			fmt.Printf("  %s %s %s %s\n", r.Kind, r.ID, r.Name, r.State)
		}
	}
	if f.dryRun {
		return rc
	}
	for _, c := range expired {
		switch err := ap.Collect(dctx, c); {
		case errors.Is(err, aws.ErrLeaseRenewed):
			fmt.Printf("aws owner %s: kept (%v)\n", ownerName(c), aws.ErrLeaseRenewed)
		case err != nil:
			fmt.Printf("aws owner %s: failed: %v\n", ownerName(c), err)
			rc = 1
		default:
			fmt.Printf("aws owner %s: removed\n", ownerName(c))
		}
	}
	return rc
}

func ownerName(c aws.Claim) string {
	if c.Owner == "" {
		return "(none, campaign " + c.Campaign + ")"
	}
	return c.Owner
}
