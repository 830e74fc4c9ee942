package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/aws"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/local"
	"github.com/linerate/linerate/sweeps/session"
	"github.com/linerate/linerate/tuning"
)

func init() {
	register(command{name: "sweep", summary: "plan and run a campaign of cells (versions x workloads), resumable", run: runSweep})
	register(command{name: "soak", summary: "rerun one cell of a run for a long window and report drift", run: runSoak})
}

const sweepUsage = `Usage: linerate sweep <plan|run> CAMPAIGN.yaml [flags]

A campaign file lists server versions (the outer dimension) and a bench
workload whose fields may be lists (each list is a dimension). plan prints
every cell in run order with the estimated wall time; run executes it into a
run directory, one JSON record per cell, resuming where it stopped.

Examples:
  linerate sweep plan sweeps/campaigns/local.yaml
  linerate sweep plan sweeps/campaigns/study.yaml --json | jq .estimate
  linerate sweep run sweeps/campaigns/local.yaml              # into runs/local
  linerate sweep run sweeps/campaigns/local.yaml --out runs/local-2 --redo
  linerate sweep run sweeps/campaigns/local.yaml --only 'valkey-9.1.2/*/64MiB/*'
  linerate sweep run lab.yaml                                  # provider: ssh
  linerate sweep run sweeps/campaigns/study.yaml --aws-profile lab \
      --region us-east-1 --ssh-from 203.0.113.7/32             # provider: aws

On ssh and aws pairs linerate is uploaded from dist/ (make dist) and a
"linerate agent" on each host starts the servers there, samples the server
host and applies the tuning profile; everything is stopped and reverted, and
an aws pair terminated, when the run ends, fails or is interrupted. aws asks
before launching, with the pair's hourly price (provider.hourly-usd, or
else the AWS Price List API's).

Cell IDs read version/op/size/<dimensions that vary>/repetition, e.g.
valkey-9.1.2/GET/8MiB/c32/r2. Running the same command again keeps done
cells, retries failed ones (up to --max-attempts) and never redoes done cells
unless --redo. docs/sweeps.md describes the file format.

Flags:
`

// Bounds on sweep flags; beyond them a value is a typo.
const (
	maxMaxAttempts = 100
	maxLinkGbps    = 10000
)

// sweepStarter also resolves selectors to exact versions so cell IDs carry
// them (valkey@9.1 -> valkey-9.1.2).
var sweepStarter = &local.Starter{}

func runSweep(ctx context.Context, args []string) int {
	fs := pflag.NewFlagSet("sweep", pflag.ContinueOnError)
	fs.SortFlags = false
	asJSON := fs.Bool("json", false, "plan: print the plan as JSON")
	out := fs.String("out", "", "run: run directory (default runs/<campaign name>)")
	redo := fs.Bool("redo", false, "run: run every cell again, done ones too")
	maxAttempts := fs.Int("max-attempts", sweeps.DefaultMaxAttempts, "run: stop retrying a cell after this many failed attempts (1-100)")
	only := fs.String("only", "", "run: only cells whose ID matches this pattern (path.Match, e.g. 'valkey-9.1.2/GET/*/*'; IDs as 'sweep plan' prints them)")
	linkGbps := fs.Float64("link-gbps", 0, "run: link capacity for the limit label, 0-10000 (0: unknown, as on loopback)")
	profiles := fs.String("profiles", "tuning/profiles", "run: where a campaign's tuning profile NAME is found as NAME.yaml (a path in the campaign is used as is)")
	ra := bindRemoteFlags(fs)
	fs.Usage = func() { fmt.Fprint(os.Stderr, sweepUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "linerate sweep: %v (see linerate sweep --help)\n", err)
		return 2
	}
	if fs.NArg() != 2 || (fs.Arg(0) != "plan" && fs.Arg(0) != "run") {
		fmt.Fprintln(os.Stderr, "linerate sweep: use linerate sweep plan FILE or linerate sweep run FILE (see linerate sweep --help)")
		return 2
	}
	if *maxAttempts < 1 || *maxAttempts > maxMaxAttempts {
		fmt.Fprintf(os.Stderr, "linerate sweep: --max-attempts %d: use 1-%d\n", *maxAttempts, maxMaxAttempts)
		return 2
	}
	// Written so that NaN fails too.
	if !(*linkGbps >= 0 && *linkGbps <= maxLinkGbps) {
		fmt.Fprintf(os.Stderr, "linerate sweep: --link-gbps %g: use 0 (unknown) to %d\n", *linkGbps, maxLinkGbps)
		return 2
	}
	if *only != "" {
		if _, err := path.Match(*only, ""); err != nil {
			fmt.Fprintf(os.Stderr, "linerate sweep: --only %q: %v; use a pattern such as 'valkey-9.1.2/GET/*/*'\n", *only, err)
			return 2
		}
	}
	action, file := fs.Arg(0), fs.Arg(1)
	c, err := sweeps.LoadCampaign(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	// run needs every version resolved (it must start them); plan falls back
	// to the selectors when a version is not installed yet. Remote
	// versions resolve on the server host once it is up.
	var resolver sweeps.Resolver = sweepStarter
	if remote(c) {
		resolver = nil
	}
	p, err := sweeps.NewPlan(ctx, c, resolver)
	if err != nil && action == "plan" {
		fmt.Fprintf(os.Stderr, "linerate sweep plan: cell IDs show selectors, not exact versions: %v\n", err)
		p, err = sweeps.NewPlan(ctx, c, nil)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate sweep: %v\n", err)
		return 2
	}
	if action == "plan" {
		if *asJSON {
			enc := json.NewEncoder(os.Stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(p); err != nil {
				fmt.Fprintf(os.Stderr, "linerate sweep: %v\n", err)
				return 1
			}
			return 0
		}
		if err := sweeps.WritePlan(os.Stdout, p); err != nil {
			return 1
		}
		return 0
	}

	if err := session.CheckSettings(c); err != nil {
		fmt.Fprintf(os.Stderr, "linerate sweep run: %v\n", err)
		return 2
	}
	// The profile is read first: a bad one fails before anything is made,
	// and the netns pair is created with the queue count it asks for.
	tune, err := loadTuning(c, *profiles)
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate sweep run: %v\n", err)
		return 2
	}
	ra.queues = tune.queues()
	var keep func(sweeps.Cell) bool
	if *only != "" {
		keep = func(cell sweeps.Cell) bool { ok, _ := path.Match(*only, cell.ID); return ok }
	}
	// Before remote versions resolve, --only may match no cell ID yet:
	// then the whole plan is what the hosts must outlive.
	need := p.EstimateOf(keep)
	if need == 0 {
		need = p.EstimateOf(nil)
	}
	opt, code := placeOptions(c, ra, "sweep run", "the plan", need)
	if code != 0 {
		return code
	}
	dir := *out
	if dir == "" {
		dir = filepath.Join("runs", c.Name)
	}
	st, err := sweeps.OpenStore(dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate sweep run: %v\n", err)
		return 1
	}
	defer st.Close()
	reapOrphans(ctx, dir)
	place, code := placeHosts(ctx, c, dir, opt, "sweep run")
	if place == nil {
		return code
	}
	defer downHosts(ctx, place, "sweep run")
	if remote(c) {
		// Versions resolve where they run: the server host's store.
		if p, err = sweeps.NewPlan(ctx, c, place.Resolver); err != nil {
			fmt.Fprintf(os.Stderr, "linerate sweep run: %v\n", err)
			return 1
		}
	}
	r := &sweeps.Runner{
		Plan: p, Store: st, Servers: place.Servers, Bench: place.Bencher,
		Sampler:     place.Sampler,
		Progress:    sweeps.NewProgress(os.Stderr, sweeps.IsTerminal(os.Stderr)),
		Env:         &sweeps.Environment{Linerate: sweeps.ThisBuild(), Hosts: place.Hosts},
		FaultCost:   place.FaultCost,
		MaxAttempts: *maxAttempts,
		Redo:        *redo,
		LinkGbps:    *linkGbps,
	}
	if keep != nil {
		r.Only = keep
		n := 0
		for _, cell := range p.Cells {
			if r.Only(cell) {
				n++
			}
		}
		if n == 0 {
			fmt.Fprintf(os.Stderr, "linerate sweep run: --only %q matches none of the %d cells (e.g. %s)\n", *only, len(p.Cells), p.Cells[0].ID)
			return 2
		}
	}
	if r.Env.Tuning, r.Tuning, code = tune.apply(ctx, place, dir, "sweep run"); code != 0 {
		return code
	}
	defer tune.revert(dir, "sweep run")
	sum, err := r.Run(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate sweep run: %v\n", err)
		return 1
	}
	fmt.Printf("results: %s\n", dir)
	switch {
	case sum.Interrupted:
		return 130
	case len(sum.Failed) > 0:
		return 1
	}
	return 0
}

const soakUsage = `Usage: linerate soak RUNDIR --cell ID [--duration 15m]

Reruns one cell of a campaign's run directory (same server version and
settings, same workload) for a long window, and reports drift of its
per-second Gbps: the first third against the last third, and any step
change. The record goes to RUNDIR/soak/<cell>-<time>.json, beside the
campaign. To make sure short cells were not a lucky window, soak the cells
you quote.

Examples:
  linerate soak runs/study --cell valkey-9.1.0/GET/8MB/r1 --duration 15m
  linerate soak runs/local --cell valkey-9.1.2/SET/64MiB/r1 --duration 2m   # IDs as sweep plan prints them

--duration is 10s to 24h: drift needs a series. The soak runs on the
campaign's own provider: its netns, ssh or aws pair is brought up again (aws
asks first and takes the same --aws-profile/--region/--ssh-from flags as
sweep run) and taken down after.
Exit codes: 0 the soak ran (the report says whether it drifted); 1 it
failed (server, bench); 2 bad input (flags, a run directory or a cell ID
the run lacks, a stored campaign that no longer loads), found before
anything is brought up.

Flags:
`

func runSoak(ctx context.Context, args []string) int {
	fs := pflag.NewFlagSet("soak", pflag.ContinueOnError)
	fs.SortFlags = false
	cell := fs.String("cell", "", "cell ID as in the run (linerate compare or ls RUNDIR/cells shows them)")
	dur := fs.Duration("duration", 15*time.Minute, "measured window of the rerun")
	profiles := fs.String("profiles", "tuning/profiles", "where the campaign's tuning profile NAME is found as NAME.yaml")
	ra := bindRemoteFlags(fs)
	fs.Usage = func() { fmt.Fprint(os.Stderr, soakUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "linerate soak: %v (see linerate soak --help)\n", err)
		return 2
	}
	if fs.NArg() != 1 || *cell == "" {
		fmt.Fprintln(os.Stderr, "linerate soak: give one run directory and --cell ID (see linerate soak --help)")
		return 2
	}
	if *dur < 10*time.Second || *dur > lab.MaxDuration {
		fmt.Fprintf(os.Stderr, "linerate soak: --duration %s: use 10s to %s; drift needs a series (e.g. 15m)\n", *dur, lab.MaxDuration)
		return 2
	}
	// The cell and the campaign are checked before the lock is taken and
	// before any host is up or tuned: a typo costs nothing.
	if _, err := sweeps.SoakCell(fs.Arg(0), *cell); err != nil {
		what := "" // a missing or unreadable directory names itself
		if errors.Is(err, sweeps.ErrNoSuchCell) {
			what = "--cell: "
		}
		fmt.Fprintf(os.Stderr, "linerate soak: %s%v\n", what, err)
		return 2
	}
	// The soak runs where the campaign ran: its own hosts, brought up again.
	c, err := sweeps.LoadCampaign(filepath.Join(fs.Arg(0), "campaign.yaml"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate soak: %v\n", err)
		return 2
	}
	st, err := sweeps.OpenStore(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate soak: %v\n", err)
		return 1
	}
	defer st.Close()
	reapOrphans(ctx, fs.Arg(0))
	tune, err := loadTuning(c, *profiles)
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate soak: %v\n", err)
		return 2
	}
	ra.queues = tune.queues()
	opt, code := placeOptions(c, ra, "soak", "the soak", *dur)
	if code != 0 {
		return code
	}
	place, code := placeHosts(ctx, c, fs.Arg(0), opt, "soak")
	if place == nil {
		return code
	}
	defer downHosts(ctx, place, "soak")
	s := &sweeps.Soak{Store: st, CellID: *cell, Duration: *dur, Servers: place.Servers, Bench: place.Bencher,
		Sampler: place.Sampler, FaultCost: place.FaultCost}
	if _, s.Tuning, code = tune.apply(ctx, place, fs.Arg(0), "soak"); code != 0 {
		return code
	}
	defer tune.revert(fs.Arg(0), "soak")
	rec, err := s.Run(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate soak: %v\n", err)
		if errors.Is(err, sweeps.ErrNoSuchCell) {
			return 2
		}
		return 1
	}
	fmt.Print(sweeps.SoakText(rec))
	if rec.Status != sweeps.StatusDone {
		return 1
	}
	return 0
}

// reapOrphans stops servers a killed runner of this directory left running.
func reapOrphans(ctx context.Context, dir string) {
	if prev, err := sweeps.ReadRun(dir); err == nil {
		for _, r := range local.ReapOrphans(ctx, prev) {
			fmt.Fprintf(os.Stderr, "sweep: stopped %s, left running by a killed runner\n", r)
		}
	}
}

// remoteFlags are how sweep run and soak reach ssh and aws hosts.
type remoteFlags struct {
	awsProfile, endpoint, region, sshFrom string
	keysEnv, yes, sshFromWide             bool
	queues                                int // from the tuning profile, not a flag
	tuningRoot                            string
}

func bindRemoteFlags(fs *pflag.FlagSet) *remoteFlags {
	var f remoteFlags
	fs.StringVar(&f.awsProfile, "aws-profile", "", "aws provider: shared-config profile with the credentials (a campaign file never holds them)")
	fs.BoolVar(&f.keysEnv, "access-keys-from-env", false, "aws provider: take AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and (temporary credentials) AWS_SESSION_TOKEN from the environment")
	fs.StringVar(&f.region, "region", "", "aws provider: region (default the campaign's provider.region)")
	fs.StringVar(&f.sshFrom, "ssh-from", "", "aws provider: the only address admitted to SSH, e.g. 203.0.113.7/32 (default the campaign's provider.ssh-from)")
	fs.BoolVar(&f.sshFromWide, "ssh-from-wide", false, "aws provider: admit an ssh-from wider than /24 (IPv4) or /56 (IPv6)")
	fs.StringVar(&f.endpoint, "aws-endpoint", "", "aws provider: endpoint URL instead of AWS's (a local fake, for testing)")
	fs.BoolVar(&f.yes, "yes", false, "aws provider: launch the pair without asking (the cost is still printed)")
	// Tests tune a fixture tree (tuning/testdata) instead of this machine.
	fs.StringVar(&f.tuningRoot, "tuning-root", "/", "local provider: root of the /proc, /sys and /etc the profile tunes; anything but / is a fixture tree")
	_ = fs.MarkHidden("tuning-root")
	return &f
}

func remote(c *sweeps.Campaign) bool {
	return c.Provider.Kind == sweeps.ProviderSSH || c.Provider.Kind == sweeps.ProviderAWS
}

// placeOptions turns the remote flags into Place's options and checks
// them, and for aws the campaign's settings and that what (the plan, the
// soak), needing about need, ends before the dead-man shutdown; nothing is
// asked of AWS yet. A non-zero exit code is bad input, the error printed.
func placeOptions(c *sweeps.Campaign, f *remoteFlags, who, what string, need time.Duration) (session.PlaceOptions, int) {
	opt := session.PlaceOptions{Starter: sweepStarter, Queues: f.queues, TuningRoot: f.tuningRoot, SSHFromWide: f.sshFromWide,
		AWS:     aws.Access{Profile: f.awsProfile, Endpoint: f.endpoint, Region: f.region},
		Confirm: func(cfg aws.Config) bool { return confirmCost(cfg, f.yes, os.Stdin, os.Stderr) },
		Log:     func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) },
	}
	if f.tuningRoot != "/" {
		if c.Provider.Kind != sweeps.ProviderLocal {
			fmt.Fprintf(os.Stderr, "linerate %s: --tuning-root: only the local provider tunes this machine's tree (the campaign's provider is %s)\n", who, c.Provider.Kind)
			return opt, 2
		}
		if st, err := os.Stat(f.tuningRoot); err != nil || !st.IsDir() {
			fmt.Fprintf(os.Stderr, "linerate %s: --tuning-root %s: not a directory\n", who, f.tuningRoot)
			return opt, 2
		}
	}
	if f.sshFrom != "" {
		pfx, err := netip.ParsePrefix(f.sshFrom)
		if err != nil {
			fmt.Fprintf(os.Stderr, "linerate %s: --ssh-from %q: want a CIDR such as 203.0.113.7/32\n", who, f.sshFrom)
			return opt, 2
		}
		opt.SSHFrom = pfx
	}
	if f.keysEnv {
		opt.AWS.KeysFromEnv()
	}
	if c.Provider.Kind == sweeps.ProviderAWS {
		switch {
		case f.awsProfile == "" && !f.keysEnv:
			fmt.Fprintf(os.Stderr, "linerate %s: %s: aws credentials: give --aws-profile NAME or --access-keys-from-env (a campaign file never holds them)\n", who, c.File)
			return opt, 2
		case f.keysEnv && (opt.AWS.AccessKeyID == "" || opt.AWS.SecretAccessKey == ""):
			fmt.Fprintf(os.Stderr, "linerate %s: --access-keys-from-env: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must both be set\n", who)
			return opt, 2
		}
		// Bad settings and work longer than the dead-man fail here, before
		// anything is asked of AWS.
		cfg, err := session.AWSConfig(c, opt)
		if err == nil {
			err = session.CheckDeadMan(cfg, what, need)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "linerate %s: %v\n", who, err)
			return opt, 2
		}
	}
	return opt, 0
}

// placeHosts brings up the campaign's hosts; nil and an exit code on
// failure, the error printed.
func placeHosts(ctx context.Context, c *sweeps.Campaign, dir string, opt session.PlaceOptions, who string) (*session.Placement, int) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "linerate %s: %v\n", who, err)
		return nil, 1
	}
	place, err := session.Place(ctx, c, dir, opt)
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate %s: %v\n", who, err)
		leftoverHint(err, who)
		if ctx.Err() != nil {
			return nil, 130
		}
		return nil, 1
	}
	return place, 0
}

// downHosts takes the hosts down, Ctrl-C included: they must not outlive
// the run.
func downHosts(ctx context.Context, place *session.Placement, who string) {
	dctx, cancel := infra.TeardownContext(ctx)
	defer cancel()
	if err := place.Down(dctx); err != nil {
		fmt.Fprintf(os.Stderr, "linerate %s: take the hosts down: %v\n", who, err)
		leftoverHint(err, who)
	}
}

// leftoverHint says how aws resources a failed teardown left are found:
// their lease is no longer renewed, and gc removes them once it has run
// out.
func leftoverHint(err error, who string) {
	if errors.Is(err, aws.ErrNotTornDown) {
		fmt.Fprintf(os.Stderr, "linerate %s: what is left is no longer renewed: linerate infra gc --provider aws --region … removes it once its lease has run out (20m)\n", who)
	}
}

// campaignTuning is a campaign's tuning profile, read before any host is
// up; nil when the campaign has none.
type campaignTuning struct {
	c     *sweeps.Campaign
	prof  tuning.Profile
	text  []byte
	where string
	tuner session.HostTuner
}

func loadTuning(c *sweeps.Campaign, profilesDir string) (*campaignTuning, error) {
	if c.Tuning == "" {
		return nil, nil
	}
	prof, where, err := local.LoadProfile(c.Tuning, profilesDir)
	if err != nil {
		return nil, err
	}
	text, err := os.ReadFile(where)
	if err != nil {
		return nil, err
	}
	return &campaignTuning{c: c, prof: prof, text: text, where: where}, nil
}

func (t *campaignTuning) queues() int {
	if t == nil {
		return 0
	}
	return session.QueuesOf(t.prof)
}

// apply tunes the placement's hosts, keeping the snapshot in the run
// directory dir (sweep run and soak share it, so either reverts what a
// killed one left); it returns the snapshot for the record, the check to
// run before each cell, and a non-zero exit code on failure (printed).
func (t *campaignTuning) apply(ctx context.Context, place *session.Placement, dir, who string) (json.RawMessage, sweeps.TuningCheck, int) {
	if t == nil {
		return nil, nil, 0
	}
	t.tuner = place.Tuner(t.text, t.prof)
	snap, err := t.tuner.Apply(ctx, dir)
	if err != nil {
		t.tuner = nil
		fmt.Fprintf(os.Stderr, "linerate %s: %s: %v\n", who, t.where, err)
		return nil, nil, 1
	}
	return snap, t.tuner, 0
}

// revert undoes apply, also after Ctrl-C: the hosts must not stay tuned.
func (t *campaignTuning) revert(dir, who string) {
	if t == nil || t.tuner == nil {
		return
	}
	rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := t.tuner.Revert(rctx); err != nil {
		snap := filepath.Join(dir, local.SnapshotFile)
		if t.c.Provider.Kind != sweeps.ProviderLocal {
			snap = "each host's agent keeps its own " + local.SnapshotFile + " (ssh, aws: ~/.cache/linerate/agent/; netns: agent-server/ and agent-client/ in the run directory) and reverts when its session ends"
		}
		fmt.Fprintf(os.Stderr, "linerate %s: %v (snapshot: %s)\n", who, err, snap)
	}
}
