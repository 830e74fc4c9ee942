package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/metrics"
	"github.com/linerate/linerate/sweeps/session"
)

func newSweep() *cobra.Command {
	return completeFlags(completeArgs(command(helpText("sweep"), "plan and run a campaign of cells (versions x workloads), resumable", bindSweep), positional(words("plan", "run"), campaignFile)), map[string]cobra.CompletionFunc{
		"out":         runDir,
		"profiles":    runDir,
		"aws-profile": awsProfiles,
	})
}

func bindSweep(c *cli) func(context.Context) int {
	asJSON := c.Bool("json", false, "plan: print the plan as JSON")
	out := c.String("out", "", "run: run directory (default runs/<campaign name>)")
	ro := session.RunOptions{Progress: sweeps.NewProgress(os.Stderr, sweeps.IsTerminal(os.Stderr))}
	c.BoolVar(&ro.Redo, "redo", false, "run: run every cell again, done ones too")
	c.IntVar(&ro.MaxAttempts, "max-attempts", sweeps.DefaultMaxAttempts, fmt.Sprintf("run: stop retrying a cell after this many failed attempts (1-%d)", session.MaxMaxAttempts))
	c.StringVar(&ro.Only, "only", "", "run: only cells whose ID matches this pattern (path.Match, e.g. 'valkey-9.1.2/GET/*/*'; IDs as 'sweep plan' prints them)")
	c.Float64Var(&ro.LinkGbps, "link-gbps", 0, fmt.Sprintf("run: link capacity for the limit label, 0-%d (0: unknown, as on loopback)", session.MaxLinkGbps))
	r := bindRemoteFlags(c, "run: where a campaign's tuning profile NAME is found as NAME.yaml (a path in the campaign is used as is)", "run: ")
	want := "use linerate sweep plan FILE or linerate sweep run FILE"
	return func(ctx context.Context) int {
		if code, done := c.want(2, 2, want); done {
			return code
		} else if c.Arg(0) != "plan" && c.Arg(0) != "run" {
			return c.usage(want)
		}
		if err := ro.Check(); err != nil {
			return c.bad("%v", err)
		}
		c.who = "sweep " + c.Arg(0)
		if c.Arg(0) == "run" {
			if code := r.startMetrics(c); code != 0 {
				return code
			}
			defer r.closeMetrics(ctx, c)
		}
		camp, err := session.Default().Load(c.Arg(1))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		// run needs every version resolved (it must start them); plan shows
		// selectors for versions not installed yet.
		var warn func(error)
		if c.Arg(0) == "plan" {
			warn = func(err error) { c.say("%v", err) }
		}
		p, err := session.PlanOrSelectors(ctx, camp, warn)
		switch {
		case err != nil:
			c.who = "sweep"
			return c.bad("%v", err)
		case c.Arg(0) == "plan" && *asJSON:
			return c.json(p)
		case c.Arg(0) == "plan":
			if err := sweeps.WritePlan(os.Stdout, p); err != nil {
				return c.end(err)
			}
			return r.preflightWithCredentials(ctx, c, camp)
		}
		dir := session.RunDir(*out, camp.Name)
		s, code := r.open(ctx, c, camp, dir, session.PlanWork(p, ro.Only))
		if s == nil {
			return code
		}
		defer r.close(ctx, c, s)
		ro.Progress = r.metrics.Progress(ro.Progress)
		sum, err := s.Run(ctx, ro)
		if err != nil {
			return c.end(err)
		}
		fmt.Printf("results: %s\n", dir)
		return sum.ExitCode()
	}
}

func newSoak() *cobra.Command {
	return completeFlags(completeArgs(command(helpText("soak"), "rerun one cell of a run for a long window and report drift", bindSoak), positional(runDir)), map[string]cobra.CompletionFunc{
		"cell":        cellIDs,
		"profiles":    runDir,
		"aws-profile": awsProfiles,
	})
}

func bindSoak(c *cli) func(context.Context) int {
	var so session.SoakOptions
	c.StringVar(&so.Cell, "cell", "", "cell ID as in the run (linerate compare or ls RUNDIR/cells shows them)")
	c.DurationVar(&so.Duration, "duration", 15*time.Minute, "measured window of the rerun")
	r := bindRemoteFlags(c, "where the campaign's tuning profile NAME is found as NAME.yaml", "")
	want := "give one run directory and --cell ID"
	return func(ctx context.Context) int {
		if code, done := c.want(1, 1, want); done {
			return code
		} else if so.Cell == "" {
			return c.usage(want)
		}
		camp, err := session.Default().LoadSoak(c.Arg(0), so)
		if err != nil {
			return c.bad("%v", err)
		}
		if code := r.startMetrics(c); code != 0 {
			return code
		}
		defer r.closeMetrics(ctx, c)
		r.metrics.SetCell(so.Cell)
		s, code := r.open(ctx, c, camp, c.Arg(0), session.Work{What: "the soak", Need: so.Duration})
		if s == nil {
			return code
		}
		defer r.close(ctx, c, s)
		rec, err := s.Soak(ctx, so)
		if err != nil {
			return c.end(err)
		}
		fmt.Print(sweeps.SoakText(rec))
		if rec.Status != sweeps.StatusDone {
			return 1
		}
		return 0
	}
}

// remoteFlags are how sweep run and soak tune, serve metrics and reach
// ssh and aws hosts.
type remoteFlags struct {
	opt                  session.Options
	metricsAddr, sshFrom string
	yes                  bool
	metrics              *metrics.Run
	metricsLinger        time.Duration
}

func bindRemoteFlags(c *cli, profilesHelp, runOnly string) *remoteFlags {
	f := &remoteFlags{}
	c.StringVar(&f.opt.Profiles, "profiles", "tuning/profiles", profilesHelp)
	c.StringVar(&f.metricsAddr, "metrics-listen", "", runOnly+metricsListenHelp)
	c.DurationVar(&f.metricsLinger, "metrics-linger", metrics.DefaultLinger, runOnly+metricsLingerHelp)
	c.StringVar(&f.opt.AWS.Profile, "aws-profile", "", "aws provider: "+profileHelp+" (a campaign file never holds them)")
	c.BoolVar(&f.opt.KeysFromEnv, "access-keys-from-env", false, "aws provider: "+keysEnvHelp)
	c.StringVar(&f.opt.AWS.Region, "region", "", "aws provider: region (default the campaign's provider.region)")
	c.StringVar(&f.sshFrom, "ssh-from", "", "aws provider: "+sshFromHelp+" (default the campaign's provider.ssh-from)")
	c.BoolVar(&f.opt.SSHFromWide, "ssh-from-wide", false, "aws provider: admit an ssh-from"+wideHelp)
	c.StringVar(&f.opt.AWS.Endpoint, "aws-endpoint", "", "aws provider: "+endpointHelp)
	c.BoolVar(&f.yes, "yes", false, "aws provider: launch the pair without asking (the cost is still printed)")
	c.BoolVar(&f.opt.AllowSlowerLink, "allow-slower-link", false, "aws provider: pass an instance type whose stated network performance is below the campaign's provider.link-gbps")
	c.StringVar(&f.opt.AgentMetrics, "agent-metrics-listen", "", "ssh and aws providers: the server host's agent serves its host figures at http://ADDR/metrics, ADDR on that host (e.g. its data address and a port)")
	// Tests tune a fixture tree (tuning/testdata) instead of this machine.
	c.StringVar(&f.opt.TuningRoot, "tuning-root", "/", "local provider: root of the /proc, /sys and /etc the profile tunes; anything but / is a fixture tree")
	_ = c.MarkHidden("tuning-root")
	return f
}

// startMetrics serves the run's metrics when --metrics-listen is given;
// code is non-zero, printed, when it cannot.
func (f *remoteFlags) startMetrics(c *cli) (code int) {
	if err := metrics.CheckLinger(f.metricsLinger); err != nil {
		return c.bad("%v", err)
	}
	m := metrics.NewRun()
	if m.Server, code = startMetrics(c.who, f.metricsAddr, m.Collectors()...); m.Server != nil {
		f.metrics = m
		f.opt.Live, f.opt.Servers = m.Hooks()
	}
	return code
}

// closeMetrics keeps the run's metrics up for --metrics-linger, then
// closes them.
func (f *remoteFlags) closeMetrics(ctx context.Context, c *cli) {
	if f.metrics != nil {
		lingerMetrics(ctx, c.who, f.metrics.Server, f.metricsLinger)
	}
}

// open opens the campaign's session for work in dir; nil and the exit
// code on failure, printed.
func (f *remoteFlags) open(ctx context.Context, c *cli, camp *sweeps.Campaign, dir string, w session.Work) (*session.Session, int) {
	c.input, c.stopped = is[*session.InputError], ctx
	var err error
	if f.opt.SSHFrom, err = session.ParseSSHFrom(f.sshFrom); err != nil {
		return nil, c.end(err)
	}
	f.opt.Work = w
	f.opt.Console(os.Stdin, os.Stderr, f.yes)
	s, err := session.Open(ctx, camp, dir, f.opt)
	if err != nil {
		return nil, c.end(err)
	}
	return s, 0
}

// preflightWithCredentials is sweep plan's preflight: run when the
// operator gave credentials (--aws-profile, --access-keys-from-env), its
// table after the plan.
func (f *remoteFlags) preflightWithCredentials(ctx context.Context, c *cli, camp *sweeps.Campaign) int {
	if f.opt.AWS.Profile == "" && !f.opt.KeysFromEnv {
		return 0
	}
	c.input, c.stopped = is[*session.InputError], ctx
	var err error
	if f.opt.SSHFrom, err = session.ParseSSHFrom(f.sshFrom); err != nil {
		return c.end(err)
	}
	f.opt.Console(os.Stdin, os.Stderr, f.yes)
	fmt.Println()
	return c.end(session.Default().Preflight(ctx, camp, &f.opt.Operator, os.Stdout))
}

// close reverts and tears down, Ctrl-C included: what the session started
// must not outlive the run.
func (f *remoteFlags) close(ctx context.Context, c *cli, s *session.Session) {
	if err := s.Close(ctx); err != nil {
		c.end(err)
	}
}
