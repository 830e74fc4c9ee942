package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/hostmetrics"
	"github.com/linerate/linerate/sweeps/parts"
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

Cell IDs read version/op/size/<dimensions that vary>/repetition, e.g.
valkey-9.1.2/GET/8MiB/c32/r2. Running the same command again keeps done
cells, retries failed ones (up to --max-attempts) and never redoes done cells
unless --redo. docs/sweeps.md describes the file format.

Flags:
`

// sweepStarter also resolves selectors to exact versions so cell IDs carry
// them (valkey@9.1 -> valkey-9.1.2).
var sweepStarter = &parts.Starter{}

func runSweep(ctx context.Context, args []string) int {
	fs := pflag.NewFlagSet("sweep", pflag.ContinueOnError)
	fs.SortFlags = false
	asJSON := fs.Bool("json", false, "plan: print the plan as JSON")
	out := fs.String("out", "", "run: run directory (default runs/<campaign name>)")
	redo := fs.Bool("redo", false, "run: run every cell again, done ones too")
	maxAttempts := fs.Int("max-attempts", sweeps.DefaultMaxAttempts, "run: stop retrying a cell after this many failed attempts")
	only := fs.String("only", "", "run: only cells whose ID matches this pattern (path.Match, e.g. 'valkey-9.1.2/GET/*/*'; IDs as 'sweep plan' prints them)")
	linkGbps := fs.Float64("link-gbps", 0, "run: link capacity for the limit label (0: unknown, as on loopback)")
	profiles := fs.String("profiles", "tuning/profiles", "run: where a campaign's tuning profile NAME is found as NAME.yaml (a path in the campaign is used as is)")
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
	if *maxAttempts < 1 {
		fmt.Fprintf(os.Stderr, "linerate sweep: --max-attempts %d: use 1 or more\n", *maxAttempts)
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
	// to the selectors when a version is not installed yet.
	p, err := sweeps.NewPlan(ctx, c, sweepStarter)
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

	if k := c.Provider.Kind; k != sweeps.ProviderLocal && k != sweeps.ProviderNetns {
		fmt.Fprintf(os.Stderr, "linerate sweep run: %s: provider %s: sweep run drives the local and netns providers so far; ssh and aws hosts plug into the runner next (linerate infra up brings them up today)\n", file, k)
		return 2
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
	place, err := parts.Place(ctx, c, dir, sweepStarter)
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate sweep run: %v\n", err)
		return 1
	}
	defer func() {
		// Always, Ctrl-C included: hosts must not outlive the run.
		dctx, cancel := infra.TeardownContext(ctx)
		defer cancel()
		if err := place.Down(dctx); err != nil {
			fmt.Fprintf(os.Stderr, "linerate sweep run: take the hosts down: %v\n", err)
		}
	}()
	// The page-fault label needs this machine's price of a fresh page.
	faultCost, _ := hostmetrics.MeasureFaultCost(0)
	for i := range place.Hosts {
		place.Hosts[i].MinorFaultCost = faultCost
	}
	r := &sweeps.Runner{
		Plan: p, Store: st, Servers: sweepStarter, Bench: place.Bencher,
		Sampler:     hostmetrics.FS{Root: "/"},
		Progress:    sweeps.NewProgress(os.Stderr, sweeps.IsTerminal(os.Stderr)),
		Env:         &sweeps.Environment{Linerate: sweeps.ThisBuild(), Hosts: place.Hosts},
		FaultCost:   faultCost,
		MaxAttempts: *maxAttempts,
		Redo:        *redo,
		LinkGbps:    *linkGbps,
	}
	if *only != "" {
		r.Only = func(cell sweeps.Cell) bool { ok, _ := path.Match(*only, cell.ID); return ok }
	}
	if c.Tuning != "" {
		prof, where, err := parts.LoadProfile(c.Tuning, *profiles)
		if err != nil {
			fmt.Fprintf(os.Stderr, "linerate sweep run: %v\n", err)
			return 2
		}
		tuner := &parts.Tuner{Host: tuning.NewLiveHost("/"), Profile: prof}
		snap, err := tuner.Apply(ctx, func(b json.RawMessage) error {
			return sweeps.WriteFileAtomic(filepath.Join(dir, "tuning-snapshot.json"), b)
		})
		if err != nil {
			fmt.Fprintf(os.Stderr, "linerate sweep run: %s: %v\n", where, err)
			return 1
		}
		defer func() {
			// Revert even after Ctrl-C: the host must not stay tuned.
			rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := tuner.Revert(rctx); err != nil {
				fmt.Fprintf(os.Stderr, "linerate sweep run: %v (snapshot: %s)\n", err, filepath.Join(dir, "tuning-snapshot.json"))
			}
		}()
		r.Env.Tuning, r.Tuning = snap, tuner
	}
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

--duration is at least 10s: drift needs a series. The soak runs on the
campaign's own provider (its netns pair is brought up again).
Exit codes: 0 the soak ran (the report says whether it drifted); 1 it
failed (server, bench); 2 bad input (flags, a cell ID the run lacks).

Flags:
`

func runSoak(ctx context.Context, args []string) int {
	fs := pflag.NewFlagSet("soak", pflag.ContinueOnError)
	fs.SortFlags = false
	cell := fs.String("cell", "", "cell ID as in the run (linerate compare or ls RUNDIR/cells shows them)")
	dur := fs.Duration("duration", 15*time.Minute, "measured window of the rerun")
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
	if *dur < 10*time.Second {
		fmt.Fprintf(os.Stderr, "linerate soak: --duration %s: use at least 10s; drift needs a series (e.g. 15m)\n", *dur)
		return 2
	}
	st, err := sweeps.OpenStore(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate soak: %v\n", err)
		return 1
	}
	defer st.Close()
	reapOrphans(ctx, fs.Arg(0))
	// The soak runs where the campaign ran: its own hosts, brought up again.
	c, err := sweeps.LoadCampaign(filepath.Join(fs.Arg(0), "campaign.yaml"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate soak: %v\n", err)
		return 1
	}
	place, err := parts.Place(ctx, c, fs.Arg(0), sweepStarter)
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate soak: %v\n", err)
		return 1
	}
	defer func() {
		dctx, cancel := infra.TeardownContext(ctx)
		defer cancel()
		if err := place.Down(dctx); err != nil {
			fmt.Fprintf(os.Stderr, "linerate soak: take the hosts down: %v\n", err)
		}
	}()
	s := &sweeps.Soak{Store: st, CellID: *cell, Duration: *dur, Servers: sweepStarter, Bench: place.Bencher, Sampler: hostmetrics.FS{Root: "/"}}
	if c, err := hostmetrics.MeasureFaultCost(0); err == nil {
		s.FaultCost = c
	}
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
		for _, r := range parts.ReapOrphans(ctx, prev) {
			fmt.Fprintf(os.Stderr, "sweep: stopped %s, left running by a killed runner\n", r)
		}
	}
}
