package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/linerate/linerate/infra/aws"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/session"
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
	metricsAddr := fs.String("metrics-listen", "", "run: "+metricsListenHelp)
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
	var mets *runMetrics
	if action == "run" {
		var code int
		if mets, code = startRunMetrics("sweep run", *metricsAddr); code != 0 {
			return code
		}
		defer mets.close()
	}
	c, err := session.Default().Load(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	// run needs every version resolved (it must start them); plan falls back
	// to the selectors when a version is not installed yet.
	p, err := session.Plan(ctx, c, nil)
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

	// Before remote versions resolve, --only may match no cell ID yet:
	// then the whole plan is what the hosts must outlive.
	need := p.EstimateOf(session.Only(*only))
	if need == 0 {
		need = p.EstimateOf(nil)
	}
	opt, code := ra.options("sweep run", *profiles, session.Work{What: "the plan", Need: need})
	if code != 0 {
		return code
	}
	mets.watch(&opt)
	dir := *out
	if dir == "" {
		dir = filepath.Join("runs", c.Name)
	}
	s, code := openSession(ctx, c, dir, opt, "sweep run")
	if s == nil {
		return code
	}
	defer closeSession(ctx, s, c, "sweep run")
	sum, err := s.Run(ctx, session.RunOptions{Only: *only, MaxAttempts: *maxAttempts, Redo: *redo, LinkGbps: *linkGbps,
		Progress: mets.progress(sweeps.NewProgress(os.Stderr, sweeps.IsTerminal(os.Stderr)))})
	if err != nil {
		return failed(ctx, "sweep run", err)
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
	metricsAddr := fs.String("metrics-listen", "", metricsListenHelp)
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
	c, err := session.Default().Load(filepath.Join(fs.Arg(0), sweeps.CampaignFile))
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate soak: %v\n", err)
		return 2
	}
	mets, code := startRunMetrics("soak", *metricsAddr)
	if code != 0 {
		return code
	}
	defer mets.close()
	opt, code := ra.options("soak", *profiles, session.Work{What: "the soak", Need: *dur})
	if code != 0 {
		return code
	}
	mets.watch(&opt)
	mets.cell(*cell)
	s, code := openSession(ctx, c, fs.Arg(0), opt, "soak")
	if s == nil {
		return code
	}
	defer closeSession(ctx, s, c, "soak")
	rec, err := s.Soak(ctx, session.SoakOptions{Cell: *cell, Duration: *dur})
	if err != nil {
		if errors.Is(err, sweeps.ErrNoSuchCell) {
			fmt.Fprintf(os.Stderr, "linerate soak: %v\n", err)
			return 2
		}
		return failed(ctx, "soak", err)
	}
	fmt.Print(sweeps.SoakText(rec))
	if rec.Status != sweeps.StatusDone {
		return 1
	}
	return 0
}

// remoteFlags are how sweep run and soak reach ssh and aws hosts.
type remoteFlags struct {
	awsProfile, endpoint, region, sshFrom string
	keysEnv, yes, sshFromWide             bool
	agentMetrics                          string
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
	fs.StringVar(&f.agentMetrics, "agent-metrics-listen", "", "ssh and aws providers: the server host's agent serves its host figures at http://ADDR/metrics, ADDR on that host (e.g. its data address and a port)")
	// Tests tune a fixture tree (tuning/testdata) instead of this machine.
	fs.StringVar(&f.tuningRoot, "tuning-root", "/", "local provider: root of the /proc, /sys and /etc the profile tunes; anything but / is a fixture tree")
	_ = fs.MarkHidden("tuning-root")
	return &f
}

// options are the session's options the flags give; a non-zero exit code
// is a flag that does not parse, the error printed.
func (f *remoteFlags) options(who, profiles string, w session.Work) (session.Options, int) {
	opt := session.Options{Profiles: profiles, TuningRoot: f.tuningRoot, Work: w, AgentMetrics: f.agentMetrics,
		Operator: operator(aws.Access{Profile: f.awsProfile, Endpoint: f.endpoint, Region: f.region}, f.keysEnv, f.yes)}
	opt.SSHFromWide = f.sshFromWide
	if f.sshFrom != "" {
		pfx, err := netip.ParsePrefix(f.sshFrom)
		if err != nil {
			fmt.Fprintf(os.Stderr, "linerate %s: --ssh-from %q: want a CIDR such as 203.0.113.7/32\n", who, f.sshFrom)
			return opt, 2
		}
		opt.SSHFrom = pfx
	}
	return opt, 0
}

// operator is what the operator says on the command line for a provider:
// access (the keys from the environment when keysEnv), consent (--yes),
// and where progress lines go.
func operator(a aws.Access, keysEnv, yes bool) session.Operator {
	if keysEnv {
		a.KeysFromEnv()
	}
	return session.Operator{AWS: a, KeysFromEnv: keysEnv, Confirm: func(cost string) bool { return confirm(cost, yes) },
		Log: func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }}
}

// confirm prints what bringing a pair up costs and asks; yes skips asking.
func confirm(cost string, yes bool) bool {
	fmt.Fprint(os.Stderr, cost)
	if yes {
		return true
	}
	fmt.Fprint(os.Stderr, "Launch? [y/N] ")
	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}

// openSession opens a session; nil and an exit code on failure, the error
// printed.
func openSession(ctx context.Context, c *sweeps.Campaign, dir string, opt session.Options, who string) (*session.Session, int) {
	s, err := session.Open(ctx, c, dir, opt)
	if err != nil {
		return nil, failed(ctx, who, err, session.Default().Left(c.Provider.Kind, err))
	}
	return s, 0
}

// closeSession reverts and tears down, Ctrl-C included: what the session
// started must not outlive the run.
func closeSession(ctx context.Context, s *session.Session, c *sweeps.Campaign, who string) {
	if err := s.Close(ctx); err != nil {
		printErr(who, err, session.Default().Left(c.Provider.Kind, err))
	}
}

// failed prints err (and the hints after it) and says the exit code: 2
// for the operator's input, 130 after Ctrl-C, 1 otherwise.
func failed(ctx context.Context, who string, err error, hints ...string) int {
	printErr(who, err, hints...)
	var in *session.InputError
	switch {
	case errors.As(err, &in):
		return 2
	case ctx.Err() != nil:
		return 130
	}
	return 1
}

// printErr prints each line of err, and each hint, as linerate WHO: ….
func printErr(who string, err error, hints ...string) {
	for _, line := range append(strings.Split(err.Error(), "\n"), hints...) {
		if line != "" {
			fmt.Fprintf(os.Stderr, "linerate %s: %s\n", who, line)
		}
	}
}
