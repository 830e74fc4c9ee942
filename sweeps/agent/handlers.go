package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/linerate/linerate/infra/kernel"
	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/hostmetrics"
	"github.com/linerate/linerate/tuning"
)

// The agent's handlers, one per operation, each given its own request.

// handler answers one request line of its operation.
type handler func(a *Agent, ctx context.Context, line []byte) agentReply

// handlers is every operation the agent answers.
var handlers = map[string]handler{
	opFacts:      typed((*Agent).facts),
	opResolve:    typed((*Agent).resolve),
	opStart:      typed((*Agent).start),
	opFlushAll:   typed((*Agent).flushAll),
	opStop:       typed((*Agent).stop),
	opInfo:       typed((*Agent).info),
	opKeyMemory:  typed((*Agent).keyMemory),
	opBGSave:     typed((*Agent).bgsave),
	opSnapshot:   typed((*Agent).snapshot),
	opTuneApply:  typed((*Agent).tuneApply),
	opTuneVerify: typed((*Agent).tuneVerify),
	opTuneRevert: typed((*Agent).tuneRevert),
	opNIC:        typed((*Agent).nic),
}

// typed is the handler that decodes the line into R and answers it
// with f; an error is the answer's.
func typed[R request](f func(*Agent, context.Context, R) (agentReply, error)) handler {
	return func(a *Agent, ctx context.Context, line []byte) agentReply {
		var req R
		if err := json.Unmarshal(line, &req); err != nil {
			return agentReply{Error: fmt.Sprintf("%s: %v", req.op(), err)}
		}
		rep, err := f(a, ctx, req)
		if err != nil {
			return agentReply{Error: err.Error()}
		}
		return rep
	}
}

// answer answers one request line of operation op.
func (a *Agent) answer(ctx context.Context, op string, line []byte) agentReply {
	h, ok := handlers[op]
	if !ok {
		return agentReply{Error: fmt.Sprintf("agent: unknown op %q", op)}
	}
	return h(a, ctx, line)
}

func (a *Agent) facts(_ context.Context, req factsRequest) (agentReply, error) {
	f := sweeps.LocalHostFacts(a.root(), req.Role)
	if req.FaultCost {
		f.MinorFaultCost, _ = hostmetrics.MeasureFaultCost(0)
	}
	return agentReply{Facts: &f, Now: time.Now()}, nil
}

func (a *Agent) resolve(ctx context.Context, req resolveRequest) (agentReply, error) {
	if req.Version == nil {
		return agentReply{}, errors.New("resolve: no version")
	}
	r, err := a.Starter.Resolve(ctx, *req.Version)
	if err != nil {
		return agentReply{}, err
	}
	return agentReply{Resolved: &r}, nil
}

func (a *Agent) start(ctx context.Context, req startRequest) (agentReply, error) {
	if req.Plan == nil {
		return agentReply{}, errors.New("start: no version")
	}
	srv, err := a.Starter.StartAt(ctx, *req.Plan, req.LogDir, req.Bind)
	if err != nil {
		return agentReply{}, err
	}
	st, err := startedTLS(srv)
	if err != nil {
		_ = srv.Stop(ctx)
		return agentReply{}, err
	}
	a.nextID++
	id := a.nextID
	a.servers[id] = srv
	a.noteServer(id, srv)
	host, port := srv.Addr()
	info, _ := srv.Info(ctx)
	return agentReply{Started: &agentServer{ID: id, Host: host, Port: port, PID: srv.PID(), Identity: srv.Identity(), Info: info, TLS: st}}, nil
}

// server is the server ref names, for operation op.
func (a *Agent) server(op string, ref serverRef) (sweeps.RunningServer, error) {
	srv := a.servers[ref.Server]
	if srv == nil {
		return nil, fmt.Errorf("%s: no server %d on this host (the agent restarted?)", op, ref.Server)
	}
	return srv, nil
}

func (a *Agent) flushAll(ctx context.Context, req flushRequest) (agentReply, error) {
	srv, err := a.server(req.op(), req.serverRef)
	if err != nil {
		return agentReply{}, err
	}
	return agentReply{}, srv.FlushAll(ctx)
}

func (a *Agent) stop(ctx context.Context, req stopRequest) (agentReply, error) {
	srv, err := a.server(req.op(), req.serverRef)
	if err != nil {
		return agentReply{}, err
	}
	if err := srv.Stop(ctx); err != nil {
		return agentReply{}, err // still ours: the cleanup tries again
	}
	delete(a.servers, req.Server)
	a.noteServer(req.Server, nil)
	return agentReply{}, nil
}

func (a *Agent) info(ctx context.Context, req infoRequest) (agentReply, error) {
	srv := a.servers[req.Server]
	if srv == nil {
		return agentReply{}, fmt.Errorf("info: no server %d on this host", req.Server)
	}
	is, ok := srv.(sweeps.InfoSampler)
	if !ok {
		return agentReply{}, fmt.Errorf("info: server %d does not read INFO", req.Server)
	}
	if err := checkSections(req.Sections); err != nil {
		return agentReply{}, err
	}
	s, err := is.SampleInfo(ctx, req.Sections...)
	if err != nil {
		return agentReply{}, err
	}
	return agentReply{Info: s.Fields, Now: s.At}, nil
}

func (a *Agent) keyMemory(ctx context.Context, req keyMemoryRequest) (agentReply, error) {
	ks, ok := a.servers[req.Server].(sweeps.KeySampler)
	if !ok {
		return agentReply{}, fmt.Errorf("key-memory: no server %d on this host that reads MEMORY USAGE", req.Server)
	}
	if req.Keys < 1 || req.Keys > maxKeySample {
		return agentReply{}, fmt.Errorf("key-memory: %d keys; 1 to %d", req.Keys, maxKeySample)
	}
	k, err := ks.KeyMemory(ctx, req.Keys)
	if err != nil {
		return agentReply{}, err
	}
	return agentReply{KeyMemory: &k}, nil
}

func (a *Agent) bgsave(ctx context.Context, req bgsaveRequest) (agentReply, error) {
	sn, ok := a.servers[req.Server].(sweeps.Snapshotter)
	if !ok {
		return agentReply{}, fmt.Errorf("bgsave: no server %d on this host that snapshots", req.Server)
	}
	return agentReply{}, sn.BGSave(ctx)
}

func (a *Agent) snapshot(_ context.Context, req snapshotRequest) (agentReply, error) {
	pid, nodes := 0, []int(nil)
	if req.Server != 0 {
		srv := a.servers[req.Server]
		if srv == nil {
			return agentReply{}, fmt.Errorf("snapshot: no server %d on this host", req.Server)
		}
		pid, nodes = srv.PID(), sweeps.NodePIDs(srv)
	}
	s, err := hostmetrics.Sampler{Kernel: kernel.FS{Root: a.root()}}.Snapshot(pid, nodes...)
	if err != nil {
		return agentReply{}, err
	}
	return agentReply{Snapshot: s}, nil
}

func (a *Agent) tuneApply(ctx context.Context, req tuneApplyRequest) (agentReply, error) {
	p, err := tuning.ParseProfile([]byte(req.Profile))
	if err != nil {
		return agentReply{}, fmt.Errorf("tuning profile: %w", err)
	}
	scope, err := tuning.ParseScope(req.Scope)
	if err != nil {
		return agentReply{}, err
	}
	// Each host of a pair tunes the NIC carrying its own data address.
	if p.NICAddress != "" && req.DataAddr != "" {
		if _, err := netip.ParseAddr(req.DataAddr); err == nil {
			p.NICAddress = req.DataAddr
		}
	}
	if err := a.revert(ctx); err != nil {
		return agentReply{}, err
	}
	if err := a.lockState(ctx); err != nil {
		return agentReply{}, err
	}
	netns := ""
	if scope == tuning.ScopeKernel && req.KernelNetns != "" {
		if netns, err = a.holdKernelNetns(req.KernelNetns); err != nil {
			return agentReply{}, err
		}
	}
	t := &tuning.Tuner{Host: tuning.NewLiveHost(a.root()).WithScope(scope, netns), Profile: p,
		Log: func(format string, args ...any) { fmt.Fprintf(os.Stderr, "linerate agent: "+format+"\n", args...) }}
	snap, err := t.Apply(ctx, a.StateDir)
	if err != nil {
		return agentReply{}, err
	}
	a.tuner = t
	return agentReply{Tuning: snap}, nil
}

// holdKernelNetns opens the machine's network namespace at path and holds
// it until the next apply, so a revert reaches it after the coordinator
// that named it is gone; the path is this process's own to it.
func (a *Agent) holdKernelNetns(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("tune-apply: the machine's network namespace: %w", err)
	}
	if a.kernelNS != nil {
		a.kernelNS.Close()
	}
	a.kernelNS = f
	return fmt.Sprintf("/proc/self/fd/%d", f.Fd()), nil
}

func (a *Agent) tuneVerify(ctx context.Context, _ tuneVerifyRequest) (agentReply, error) {
	if a.tuner == nil {
		return agentReply{}, errors.New("tune-verify: no profile applied on this host (the agent restarted?)")
	}
	rep, drifts, err := a.tuner.Verify(ctx)
	if err != nil {
		return agentReply{}, err
	}
	return agentReply{Tuning: rep, Drifts: drifts}, nil
}

func (a *Agent) tuneRevert(ctx context.Context, _ tuneRevertRequest) (agentReply, error) {
	return agentReply{}, a.revert(ctx)
}
