package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/kernel"
	"github.com/linerate/linerate/infra/launch"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/bench"
	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/agent"
	"github.com/linerate/linerate/sweeps/calibrate"
	"github.com/linerate/linerate/sweeps/hostmetrics"
	"github.com/linerate/linerate/sweeps/start"
	"github.com/linerate/linerate/tuning"
)

// placement is where a campaign's servers and load run.
type placement struct {
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
	// to the placement's hosts; agentsTune says agents do, each keeping
	// its snapshot on its host.
	Tuner      func(text []byte, p tuning.Profile) hostTuner
	agentsTune bool
	// Down tears the hosts down; call it always, also after an error or
	// Ctrl-C, with a context that survives the interrupt.
	Down func(ctx context.Context) error
	// clients.go: the hosts' data interfaces, the first client host's
	// clock, and what the link is calibrated on (nil: no link, loopback).
	NICs        []sweeps.NICSource
	ClientClock time.Duration
	link        *calibrate.Pair
}

// hostTuner applies a profile for the length of a run (tuning.Tuner,
// agent.RemoteTuner). Apply's stateDir is the run's directory: the local
// Tuner keeps its snapshot there until Revert (and reverts one an earlier
// run left); RemoteTuner writes both agents' snapshots there for the
// record, each agent keeping its own on its host.
type hostTuner interface {
	Apply(ctx context.Context, stateDir string) (json.RawMessage, error)
	sweeps.TuningCheck
	Revert(ctx context.Context) error
}

// place brings prov's pair up and makes it a placement as the row's Hosts
// say. Up tears down what it made on failure; so does place, agents
// first.
func place(ctx context.Context, row *Row, prov infra.Provider, spec infra.Spec, opt *Options) (*placement, error) {
	pair, err := prov.Up(ctx, spec)
	if err != nil {
		dctx, cancel := infra.TeardownContext(ctx)
		defer cancel()
		return nil, errors.Join(fmt.Errorf("bring up the %s pair: %w", prov.Kind(), err), prov.Down(dctx))
	}
	switch row.Hosts {
	case HostsNamespaces:
		return placeNamespaces(ctx, pair, prov, spec.Dir, opt.Live)
	case HostsAgents:
		return placeRemote(ctx, pair, prov, opt)
	}
	host := tuning.NewLiveHost("/")
	if opt.TuningRoot != "" && filepath.Clean(opt.TuningRoot) != "/" {
		host = tuning.NewFixtureHost(opt.TuningRoot)
	}
	pl := placeHere([]sweeps.HostFacts{sweeps.LocalHostFacts("/", "server+client")}, &start.Starter{}, bench.Bencher{Live: opt.Live, MemAvailable: kernel.FS{}.MemAvailable}, prov.Down)
	pl.Tuner = func(_ []byte, p tuning.Profile) hostTuner { return &tuning.Tuner{Host: host, Profile: p, Log: opt.Log} }
	return pl, nil
}

// placeHere is a placement whose servers this process starts and samples.
func placeHere(hosts []sweeps.HostFacts, st *start.Starter, b sweeps.Bencher, down func(context.Context) error) *placement {
	// The page-fault label needs this machine's price of a fresh page.
	cost, _ := hostmetrics.MeasureFaultCost(0)
	for i := range hosts {
		hosts[i].MinorFaultCost = cost
	}
	return &placement{Servers: st, Resolver: st, Bencher: b, Sampler: hostmetrics.Sampler{},
		Hosts: hosts, FaultCost: cost, Down: down}
}

// placeNamespaces: servers start in the server namespace on its data
// address (198.18.0.1), `linerate bench` runs in the client's.
func placeNamespaces(ctx context.Context, pair infra.Pair, prov infra.Provider, dir string, live func(*lab.Live)) (*placement, error) {
	fail := func(err error) (*placement, error) {
		dctx, cancel := infra.TeardownContext(ctx)
		defer cancel()
		return nil, errors.Join(err, prov.Down(dctx))
	}
	abs, err := filepath.Abs(dir) // the agents' state, beside the run
	if err != nil {
		return fail(err)
	}
	srv, ok := pair.Server.(infra.Entered)
	if !ok {
		return fail(fmt.Errorf("%s provider gave a %T server host, not a network namespace", prov.Kind(), pair.Server))
	}
	starter := &start.Starter{Net: launch.NetPlaceOf(srv), Bind: srv.DataAddr().String()}
	hosts := []sweeps.HostFacts{sweeps.LocalHostFacts("/", "server ("+srv.Name()+", "+srv.DataAddr().String()+")")}
	for i, h := range pair.ClientHosts() {
		hosts = append(hosts, sweeps.LocalHostFacts("/", clientRole(i)+" ("+h.Name()+", "+h.DataAddr().String()+")"))
	}
	// Tuning acts inside each namespace (its veth, its sysctls), which
	// only a process in there sees: an agent per namespace, started when a
	// profile is applied. The two share one kernel: the server's agent
	// tunes what the kernel keeps once, each agent what its namespace owns.
	agents := pairAgents(pair)
	for role, a := range agents {
		a.StateDir = filepath.Join(abs, "agent-"+role)
	}
	for role, a := range agents {
		a.TuneScope = tuning.ScopeNamespace
		if role == "server" {
			a.TuneScope = tuning.ScopeKernel
		}
	}
	// The machine's namespace, held by this process until Down, so the
	// server's agent can open it by path when it applies.
	machine, err := tuning.OpenMachineNetns()
	if err != nil {
		return fail(err)
	}
	agents["server"].KernelNetns = machine.Path
	down := agentsThenDown(agents, prov)
	nics, closeNICs := netnsNICs(srv, pair)
	downAndLetGo := func(ctx context.Context) error { defer machine.Close(); closeNICs(); return down(ctx) }
	pl := placeHere(hosts, starter, clientBencher(pair, nil, live), downAndLetGo)
	pl.Tuner, pl.agentsTune = remoteTuner(agents), true
	pl.NICs = nics
	pl.link = linkPair(pair, nil, nics)
	return pl, nil
}

// placeRemote starts an agent on each host of a pair and reads their facts.
func placeRemote(ctx context.Context, pair infra.Pair, prov infra.Provider, opt *Options) (*placement, error) {
	log := opt.Log
	agents := pairAgents(pair)
	if opt.AgentMetrics != "" {
		agents["server"].Args = append(agents["server"].Args, "--metrics-listen", opt.AgentMetrics)
	}
	down := agentsThenDown(agents, prov)
	fail := func(err error) (*placement, error) {
		dctx, cancel := infra.TeardownContext(ctx)
		defer cancel()
		return nil, errors.Join(err, down(dctx))
	}
	var hosts []sweeps.HostFacts
	var cost time.Duration
	var offsets []time.Duration // the client hosts' clocks
	for _, role := range agent.Roles(agents) {
		a := agents[role]
		f, err := a.Facts(ctx, role+" ("+a.Host.Name()+", "+addrString(a.Host.DataAddr())+")", role == "server")
		if err != nil {
			return fail(err)
		}
		if role == "server" {
			cost = f.MinorFaultCost
		} else {
			offsets = append(offsets, f.ClockOffset)
		}
		hosts = append(hosts, f)
	}
	starter := &agent.RemoteStarter{Agent: agents["server"], Shift: hosts[0].ClockOffset - hosts[1].ClockOffset}
	if d := starter.Shift.Abs(); d > 100*time.Millisecond && log != nil {
		// Corrected, but a clock that jumps during the run is not.
		log("note: the server host's clock is %v off the client host's; host metrics are shifted to match (is NTP running?)", starter.Shift.Round(time.Millisecond))
	}
	pl := &placement{Servers: starter, Resolver: starter, Bencher: clientBencher(pair, offsets, opt.Live),
		Hosts: hosts, FaultCost: cost, Tuner: remoteTuner(agents), agentsTune: true, Down: down,
		NICs: agentNICs(agents), ClientClock: offsets[0]}
	pl.link = linkPair(pair, offsets, pl.NICs)
	return pl, nil
}

// pairAgents are the (not yet started) agents of a pair's hosts, by role:
// server, client, client-2 ….
func pairAgents(pair infra.Pair) map[string]*agent.AgentClient {
	agents := map[string]*agent.AgentClient{"server": {Host: pair.Server}}
	for i, h := range pair.ClientHosts() {
		agents[clientRole(i)] = &agent.AgentClient{Host: h}
	}
	return agents
}

// agentsThenDown closes the agents first, so they stop their servers and
// revert their tuning while the hosts still exist, then takes the pair down.
func agentsThenDown(agents map[string]*agent.AgentClient, prov infra.Provider) func(context.Context) error {
	return func(ctx context.Context) error {
		var errs []error
		for _, role := range agent.Roles(agents) {
			errs = append(errs, agents[role].Close(ctx))
		}
		return errors.Join(append(errs, prov.Down(ctx))...)
	}
}

func remoteTuner(agents map[string]*agent.AgentClient) func([]byte, tuning.Profile) hostTuner {
	return func(text []byte, _ tuning.Profile) hostTuner {
		return &agent.RemoteTuner{Agents: agents, Profile: text}
	}
}

func addrString(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}
