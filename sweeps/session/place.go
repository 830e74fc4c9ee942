package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/linerate/linerate/infra/aws"
	"github.com/linerate/linerate/infra/sshhost"
	"github.com/linerate/linerate/sweeps/agent"
	"github.com/linerate/linerate/sweeps/hostmetrics"
	"github.com/linerate/linerate/sweeps/local"
	"github.com/linerate/linerate/tuning"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/netns"
	"github.com/linerate/linerate/sweeps"
)

// Placement is where a campaign's servers and load run.
type Placement struct {
	// Servers starts versions and Resolver names them exactly, on the
	// host that runs them.
	Servers  sweeps.ServerStarter
	Resolver sweeps.Resolver
	Bencher  sweeps.Bencher
	// Sampler reads this host's /proc; nil where servers run remotely
	// (their agent samples, see sweeps.HostSampler).
	Sampler sweeps.Sampler
	Hosts   []sweeps.HostFacts
	// FaultCost is the price of a fresh page on the server host.
	FaultCost time.Duration
	// Tuner applies a tuning profile (the file's text and its parsed form)
	// to the placement's hosts.
	Tuner func(text []byte, p tuning.Profile) HostTuner
	// Down tears the hosts down; call it always, also after an error or
	// Ctrl-C, with a context that survives the interrupt.
	Down func(ctx context.Context) error
}

// HostTuner applies a profile for the length of a run (Tuner, RemoteTuner).
// Apply's stateDir is the run's directory: the local Tuner keeps its
// snapshot there until Revert (and reverts one an earlier run left);
// RemoteTuner writes both agents' snapshots there for the record, each
// agent keeping its own on its host.
type HostTuner interface {
	Apply(ctx context.Context, stateDir string) (json.RawMessage, error)
	sweeps.TuningCheck
	Revert(ctx context.Context) error
}

// PlaceOptions are what Place needs beyond the campaign.
type PlaceOptions struct {
	// Starter starts servers on this machine (local, netns).
	Starter *local.Starter
	// Provider, when set, replaces the ssh or aws provider the campaign's
	// settings describe: tests give an aws provider on a fake endpoint.
	Provider infra.Provider
	// AWS is the access for the aws provider: a campaign file never holds
	// credentials. A region here wins over the campaign's.
	AWS aws.Access
	// SSHFrom, when valid, wins over the campaign's ssh-from (the
	// operator's own address, which a shared campaign file should not fix).
	SSHFrom netip.Prefix
	// SSHFromWide admits an ssh-from wider than /24 (IPv4) or /56 (IPv6):
	// the operator's flag, never the campaign file's.
	SSHFromWide bool
	// Confirm is asked before an aws pair is launched (the cost prompt);
	// nil refuses to launch.
	Confirm func(aws.Config) bool
	// Log receives progress lines of bringing hosts up; nil is silent.
	Log func(format string, args ...any)
	// Queues is the NIC queue count the tuning profile asks for: the netns
	// provider creates its veth with that many, so the profile can set it.
	Queues int
	// TuningRoot is the tree the local provider tunes: "" or "/" is this
	// machine, anything else a fixture tree (tuning.NewFixtureHost).
	TuningRoot string
}

// Place brings up the campaign's hosts. local: everything on this host over
// loopback, the bench in this process. netns: a namespace pair joined by a
// veth (198.18.0.1 server, 198.18.0.2 client); servers start in the server
// namespace and `linerate bench` runs in the client one. ssh and aws: a
// `linerate agent` on each host starts the servers, samples the server
// host and tunes both; `linerate bench` runs on the client host.
func Place(ctx context.Context, c *sweeps.Campaign, dir string, opt PlaceOptions) (*Placement, error) {
	starter := opt.Starter
	if starter == nil {
		starter = &local.Starter{}
	}
	noop := func(context.Context) error { return nil }
	host := tuning.NewLiveHost("/")
	if opt.TuningRoot != "" && filepath.Clean(opt.TuningRoot) != "/" {
		host = tuning.NewFixtureHost(opt.TuningRoot)
	}
	localTuner := func(_ []byte, p tuning.Profile) HostTuner {
		return &local.Tuner{Host: host, Profile: p, Log: opt.Log}
	}
	here := func(hosts []sweeps.HostFacts, b sweeps.Bencher, down func(context.Context) error) *Placement {
		// The page-fault label needs this machine's price of a fresh page.
		cost, _ := hostmetrics.MeasureFaultCost(0)
		for i := range hosts {
			hosts[i].MinorFaultCost = cost
		}
		return &Placement{Servers: starter, Resolver: starter, Bencher: b, Sampler: hostmetrics.FS{Root: "/"},
			Hosts: hosts, FaultCost: cost, Tuner: localTuner, Down: down}
	}
	switch c.Provider.Kind {
	case sweeps.ProviderLocal:
		return here([]sweeps.HostFacts{sweeps.LocalHostFacts("/", "server+client")}, local.Bencher{}, noop), nil
	case sweeps.ProviderNetns:
		prov, err := netns.FromSettings(c.Provider.Settings)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.File, err)
		}
		abs, err := filepath.Abs(dir) // the agents' state, beside the run
		if err != nil {
			return nil, err
		}
		pair, err := prov.Up(ctx, infra.Spec{Campaign: c.Name, Dir: dir, Queues: opt.Queues})
		if err != nil {
			return nil, fmt.Errorf("bring up the netns pair: %w", err)
		}
		srv, ok := pair.Server.(*netns.Host)
		if !ok {
			_ = prov.Down(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("netns provider gave a %T server host", pair.Server)
		}
		starter.Net, starter.Bind = local.NetPlace(srv), srv.DataAddr().String()
		server := sweeps.LocalHostFacts("/", "server ("+srv.Name()+", "+srv.DataAddr().String()+")")
		client := sweeps.LocalHostFacts("/", "client ("+pair.Client.Name()+", "+pair.Client.DataAddr().String()+")")
		// Tuning acts inside each namespace (its veth, its sysctls), which
		// only a process in there sees: an agent per namespace, started
		// when a profile is applied. The two share one kernel: the
		// server's agent tunes what the kernel keeps once, each agent
		// what its namespace owns.
		agents := pairAgents(pair)
		for role, a := range agents {
			a.StateDir = filepath.Join(abs, "agent-"+role)
		}
		agents["server"].TuneScope, agents["client"].TuneScope = tuning.ScopeKernel, tuning.ScopeNamespace
		agents["server"].KernelNetns = fmt.Sprintf("/proc/%d/ns/net", os.Getpid()) // this process's: the machine's
		pl := here([]sweeps.HostFacts{server, client}, local.HostBencher{Host: pair.Client}, agentsThenDown(agents, prov))
		pl.Tuner = remoteTuner(agents)
		return pl, nil
	case sweeps.ProviderSSH, sweeps.ProviderAWS:
		prov := opt.Provider
		if prov == nil {
			var err error
			if prov, err = remoteProvider(ctx, c, opt); err != nil {
				return nil, err
			}
		}
		pair, err := prov.Up(ctx, infra.Spec{Campaign: c.Name, Dir: dir})
		if err != nil {
			dctx, cancel := infra.TeardownContext(ctx)
			defer cancel()
			return nil, errors.Join(fmt.Errorf("bring up the %s pair: %w", prov.Kind(), err), prov.Down(dctx))
		}
		return placeRemote(ctx, pair, prov, opt.Log)
	}
	return nil, fmt.Errorf("%s: provider %q: want local, netns, ssh or aws", c.File, c.Provider.Kind)
}

// CheckSettings reads the campaign's provider settings (and, for ssh, its
// key files) without bringing anything up, so bad input fails before a run
// directory is made or a host is touched.
func CheckSettings(c *sweeps.Campaign) error {
	var err error
	switch c.Provider.Kind {
	case sweeps.ProviderNetns:
		_, err = netns.FromSettings(c.Provider.Settings)
	case sweeps.ProviderSSH:
		var p *sshhost.Provider
		if p, err = sshhost.FromSettings(c.Provider.Settings); err == nil {
			for _, cfg := range []sshhost.Config{p.Server, p.Client} {
				cfg.KnownHosts = "known_hosts" // filled from the run directory by Up
				if _, err = sshhost.New(cfg); err != nil {
					err = fmt.Errorf("provider.%s: %w", cfg.Label, err)
					break
				}
			}
		}
	case sweeps.ProviderAWS:
		_, err = aws.FromSettings(c.Provider.Settings)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", c.File, err)
	}
	return nil
}

// remoteProvider builds the ssh or aws provider from the campaign.
func remoteProvider(ctx context.Context, c *sweeps.Campaign, opt PlaceOptions) (infra.Provider, error) {
	if c.Provider.Kind == sweeps.ProviderSSH {
		p, err := sshhost.FromSettings(c.Provider.Settings)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.File, err)
		}
		return p, nil
	}
	cfg, err := AWSConfig(c, opt)
	if err != nil {
		return nil, err
	}
	// The clients first: a profile that does not load fails before the
	// operator is asked to spend money.
	p, err := aws.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := aws.LookUpPrice(ctx, &cfg); err != nil && opt.Log != nil {
		opt.Log("aws: %v", err)
	}
	if opt.Confirm == nil || !opt.Confirm(cfg) {
		return nil, errors.New("aws pair not launched")
	}
	p.Log = opt.Log
	return p, nil
}

// AWSConfig is the aws provider's configuration for the campaign: its
// provider settings with the access and the operator's SSH source from
// opt, checked without asking AWS anything. An error is bad input.
func AWSConfig(c *sweeps.Campaign, opt PlaceOptions) (aws.Config, error) {
	cfg, err := aws.FromSettings(c.Provider.Settings)
	if err != nil {
		return cfg, fmt.Errorf("%s: %w", c.File, err)
	}
	region := cfg.Access.Region
	cfg.Access = opt.AWS
	if cfg.Access.Region == "" {
		cfg.Access.Region = region
	}
	from := c.File + ": provider.ssh-from"
	if opt.SSHFrom.IsValid() {
		cfg.SSHFrom, from = opt.SSHFrom, "--ssh-from"
	}
	cfg.SSHFromWide = opt.SSHFromWide
	if err := cfg.CheckSSHFrom(); err != nil {
		return cfg, fmt.Errorf("%s: %w", from, err)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("%s: %w", c.File, err)
	}
	return cfg, nil
}

// PairUpAllowance is what CheckDeadMan adds to a run for bringing the pair
// up, installing the versions and taking it down.
const PairUpAllowance = 15 * time.Minute

// CheckDeadMan refuses work that needs the aws pair longer than its
// dead-man shutdown allows: the hosts would shut down mid-run. what names
// the work ("the plan"), need is its estimate.
func CheckDeadMan(cfg aws.Config, what string, need time.Duration) error {
	dm := cfg.DeadManOrDefault()
	if need+PairUpAllowance <= dm {
		return nil
	}
	return fmt.Errorf("%s needs about %v (estimate) plus %v to bring the pair up, longer than the aws dead-man shutdown after %v (provider.dead-man): the hosts would shut down mid-run; raise provider.dead-man, or run a part with --only",
		what, need.Round(time.Second), PairUpAllowance, dm)
}

// placeRemote starts an agent on each host of a pair and reads their facts.
func placeRemote(ctx context.Context, pair infra.Pair, prov infra.Provider, log func(string, ...any)) (*Placement, error) {
	agents := pairAgents(pair)
	down := agentsThenDown(agents, prov)
	fail := func(err error) (*Placement, error) {
		dctx, cancel := infra.TeardownContext(ctx)
		defer cancel()
		return nil, errors.Join(err, down(dctx))
	}
	var hosts []sweeps.HostFacts
	var cost time.Duration
	for _, role := range []string{"server", "client"} {
		a := agents[role]
		f, err := a.Facts(ctx, role+" ("+a.Host.Name()+", "+addrString(a.Host.DataAddr())+")", role == "server")
		if err != nil {
			return fail(err)
		}
		if role == "server" {
			cost = f.MinorFaultCost
		}
		hosts = append(hosts, f)
	}
	starter := &agent.RemoteStarter{Agent: agents["server"], Shift: hosts[0].ClockOffset - hosts[1].ClockOffset}
	if d := starter.Shift.Abs(); d > 100*time.Millisecond && log != nil {
		// Corrected, but a clock that jumps during the run is not.
		log("note: the server host's clock is %v off the client host's; host metrics are shifted to match (is NTP running?)", starter.Shift.Round(time.Millisecond))
	}
	return &Placement{Servers: starter, Resolver: starter, Bencher: local.HostBencher{Host: pair.Client},
		Hosts: hosts, FaultCost: cost, Tuner: remoteTuner(agents), Down: down}, nil
}

// pairAgents are the (not yet started) agents of a pair's hosts, by role.
func pairAgents(pair infra.Pair) map[string]*agent.AgentClient {
	return map[string]*agent.AgentClient{"server": {Host: pair.Server}, "client": {Host: pair.Client}}
}

// agentsThenDown closes the agents first, so they stop their servers and
// revert their tuning while the hosts still exist, then takes the pair down.
func agentsThenDown(agents map[string]*agent.AgentClient, prov infra.Provider) func(context.Context) error {
	return func(ctx context.Context) error {
		var errs []error
		for _, role := range []string{"server", "client"} {
			errs = append(errs, agents[role].Close(ctx))
		}
		return errors.Join(append(errs, prov.Down(ctx))...)
	}
}

func remoteTuner(agents map[string]*agent.AgentClient) func([]byte, tuning.Profile) HostTuner {
	return func(text []byte, _ tuning.Profile) HostTuner {
		return &agent.RemoteTuner{Agents: agents, Profile: text}
	}
}

// QueuesOf is the queue count a profile asks for (0: it does not say).
func QueuesOf(p tuning.Profile) int {
	return max(p.Queues.Combined, p.Queues.RX, p.Queues.TX)
}

func addrString(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}
