package parts

// The coordinator's side of the agent: one long command session per remote
// host, requests answered in order, server exits reported as events.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/hostmetrics"
)

// AgentClient drives `linerate agent` on a host over one session, started
// on first use.
type AgentClient struct {
	Host infra.Host
	// StateDir is the agent's directory on the host for its tuning snapshot
	// (relative to the login directory); default .cache/linerate/agent.
	StateDir string
	// CallTimeout bounds one request; default 2 minutes (a server start
	// with a large maxmemory, a tuning apply).
	CallTimeout time.Duration
	// Args are more `linerate agent` flags (--store, --docker).
	Args []string

	mu      sync.Mutex // one request at a time
	started bool
	stdin   *io.PipeWriter
	cancel  context.CancelFunc
	done    chan struct{} // closed when the session ended
	endErr  error
	stderr  *infra.TailBuffer

	evMu    sync.Mutex
	nextID  int
	pending map[int]chan agentReply
	exits   map[int]*serverEnd // by server ID, until stopped
}

func (c *AgentClient) timeout() time.Duration {
	if c.CallTimeout > 0 {
		return c.CallTimeout
	}
	return 2 * time.Minute
}

// start opens the session; c.mu is held.
func (c *AgentClient) start(ctx context.Context) error {
	if c.started {
		select {
		case <-c.done:
			// The session ended under us (a dropped connection): its
			// servers were reported gone; later requests get a fresh agent.
			c.stdin.Close()
			c.cancel()
		default:
			return nil
		}
	}
	bin, err := c.Host.Linerate(ctx)
	if err != nil {
		return fmt.Errorf("agent on %s: %w", c.Host.Name(), err)
	}
	dir := c.StateDir
	if dir == "" {
		dir = ".cache/linerate/agent"
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	// The session outlives any one request; Close ends it.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.stdin, c.cancel, c.done = inW, cancel, make(chan struct{})
	c.stderr = &infra.TailBuffer{Max: 4096}
	c.pending, c.exits = map[int]chan agentReply{}, map[int]*serverEnd{}
	c.started = true
	go func() {
		err := c.Host.Exec(sctx, infra.Command{Argv: append([]string{bin, "agent", "--state-dir", dir}, c.Args...), Stdin: inR, Stdout: outW, Stderr: c.stderr, Once: true})
		if err == nil {
			// A clean end: Close asked for it.
			outW.Close()
			inR.Close()
			return
		}
		if tail := lastLine(c.stderr.String()); tail != "" {
			err = fmt.Errorf("%w; agent stderr: %s", err, tail)
		}
		outW.CloseWithError(err)
		inR.CloseWithError(err)
	}()
	go c.read(outR)
	return nil
}

// read dispatches the agent's lines until the session ends.
func (c *AgentClient) read(out io.Reader) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var r agentReply
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			continue // not ours (a shell's greeting); replies are JSON
		}
		c.evMu.Lock()
		switch {
		case r.Event == "exited":
			if e := c.exits[r.Server]; e != nil {
				e.end(errors.New(r.Error))
			}
		case r.ID != 0:
			if r.Started != nil {
				// Registered before the next line is read: an exit
				// event follows its start's answer.
				c.exits[r.Started.ID] = &serverEnd{ch: make(chan error, 1)}
			}
			if ch := c.pending[r.ID]; ch != nil {
				ch <- r
				delete(c.pending, r.ID)
			}
		}
		c.evMu.Unlock()
	}
	err := sc.Err()
	if err == nil {
		err = io.EOF
	}
	c.evMu.Lock()
	c.endErr = err
	close(c.done)
	// The agent stops its servers when its input ends.
	c.endServers(fmt.Errorf("agent on %s ended (%v); it stopped its server", c.Host.Name(), err))
	c.evMu.Unlock()
}

// endServers reports every server as gone; c.evMu is held.
func (c *AgentClient) endServers(err error) {
	for _, e := range c.exits {
		e.end(err)
	}
}

// serverEnd is a server's Exited channel: one end, reported once.
type serverEnd struct {
	ch   chan error
	once sync.Once
}

// end reports err (nil: an asked-for stop, no report) and closes; false
// when the end was reported already.
func (e *serverEnd) end(err error) (first bool) {
	e.once.Do(func() {
		first = true
		if err != nil {
			e.ch <- err
		}
		close(e.ch)
	})
	return first
}

// call sends one request and waits for its answer.
func (c *AgentClient) call(ctx context.Context, req agentRequest) (agentReply, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.start(ctx); err != nil {
		return agentReply{}, err
	}
	c.evMu.Lock()
	c.nextID++
	req.ID = c.nextID
	ch := make(chan agentReply, 1)
	c.pending[req.ID] = ch
	c.evMu.Unlock()
	forget := func() {
		c.evMu.Lock()
		delete(c.pending, req.ID)
		c.evMu.Unlock()
	}
	line, err := json.Marshal(req)
	if err != nil {
		forget()
		return agentReply{}, err
	}
	if _, err := c.stdin.Write(append(line, '\n')); err != nil {
		forget()
		return agentReply{}, fmt.Errorf("agent on %s: %s: %w", c.Host.Name(), req.Op, err)
	}
	t := time.NewTimer(c.timeout())
	defer t.Stop()
	select {
	case r := <-ch:
		if r.Error != "" {
			return r, fmt.Errorf("%s on %s: %s", req.Op, c.Host.Name(), r.Error)
		}
		return r, nil
	case <-c.done:
		forget()
		return agentReply{}, fmt.Errorf("agent on %s: %s: session ended: %v", c.Host.Name(), req.Op, c.endErr)
	case <-ctx.Done():
		forget()
		return agentReply{}, fmt.Errorf("agent on %s: %s: %w", c.Host.Name(), req.Op, ctx.Err())
	case <-t.C:
		forget()
		return agentReply{}, fmt.Errorf("agent on %s: %s: no answer after %v", c.Host.Name(), req.Op, c.timeout())
	}
}

// Close ends the session: the agent sees its input end, stops what it
// started and reverts its tuning, then exits.
func (c *AgentClient) Close(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started {
		return nil
	}
	c.stdin.Close()
	select {
	case <-c.done:
	case <-ctx.Done():
	}
	c.cancel()
	c.started = false
	if c.endErr != nil && !errors.Is(c.endErr, io.EOF) {
		return fmt.Errorf("agent on %s: %v", c.Host.Name(), c.endErr)
	}
	return nil
}

// Facts are the host's facts as its agent reads them, with the price of a
// page fault there when faultCost is set.
func (c *AgentClient) Facts(ctx context.Context, role string, faultCost bool) (sweeps.HostFacts, error) {
	r, err := c.call(ctx, agentRequest{Op: opFacts, Role: role, FaultCost: faultCost})
	if err != nil {
		return sweeps.HostFacts{}, err
	}
	if r.Facts == nil {
		return sweeps.HostFacts{}, fmt.Errorf("facts of %s: empty answer", c.Host.Name())
	}
	return *r.Facts, nil
}

// RemoteStarter starts campaign versions on a remote server host through
// its agent (sweeps.ServerStarter and sweeps.Resolver): store selectors
// resolve in that host's store, binaries are paths there, images run with
// its docker. Servers listen on the host's data address.
type RemoteStarter struct {
	Agent *AgentClient
	// LogDir is where server logs go on the host; default
	// .cache/linerate/servers under the login directory.
	LogDir string
}

// Resolve implements sweeps.Resolver on the server host.
func (s *RemoteStarter) Resolve(ctx context.Context, v sweeps.VersionSpec) (sweeps.Resolved, error) {
	r, err := s.Agent.call(ctx, agentRequest{Op: opResolve, Version: &v})
	if err != nil {
		return sweeps.Resolved{}, err
	}
	if r.Resolved == nil {
		return sweeps.Resolved{}, fmt.Errorf("resolve %s on %s: empty answer", v.Selector(), s.Agent.Host.Name())
	}
	return *r.Resolved, nil
}

// Start implements sweeps.ServerStarter. logDir (the local run's) is not
// used: logs stay on the host, and a crash's log tail comes back in the
// exit message.
func (s *RemoteStarter) Start(ctx context.Context, pv sweeps.PlanVersion, _ string) (sweeps.RunningServer, error) {
	dir := s.LogDir
	if dir == "" {
		dir = ".cache/linerate/servers"
	}
	addr := s.Agent.Host.DataAddr()
	bind := ""
	if addr.IsValid() {
		bind = addr.String()
	}
	a := s.Agent
	r, err := a.call(ctx, agentRequest{Op: opStart, Plan: &pv, Bind: bind, LogDir: dir})
	if err != nil {
		return nil, err
	}
	st := r.Started
	if st == nil {
		return nil, fmt.Errorf("start %s on %s: empty answer", pv.Segment, a.Host.Name())
	}
	srv := &remoteServer{agent: a, st: *st}
	if addr.IsValid() {
		// Containers report 127.0.0.1 (host network); the client host
		// reaches the server at the data address.
		srv.st.Host = addr.String()
	}
	a.evMu.Lock()
	e := a.exits[st.ID]
	a.evMu.Unlock()
	if e == nil {
		return nil, fmt.Errorf("start %s on %s: answer without registration", pv.Segment, a.Host.Name())
	}
	srv.exited = e.ch
	return srv, nil
}

// remoteServer is a server an agent started (sweeps.RunningServer and
// sweeps.HostSampler).
type remoteServer struct {
	agent  *AgentClient
	st     agentServer
	exited <-chan error
}

func (r *remoteServer) Addr() (string, int)                             { return r.st.Host, r.st.Port }
func (r *remoteServer) PID() int                                        { return 0 } // not on this host
func (r *remoteServer) Identity() sweeps.Resolved                       { return r.st.Identity }
func (r *remoteServer) Info(context.Context) (map[string]string, error) { return r.st.Info, nil }
func (r *remoteServer) Exited() <-chan error                            { return r.exited }

func (r *remoteServer) FlushAll(ctx context.Context) error {
	_, err := r.agent.call(ctx, agentRequest{Op: opFlushAll, Server: r.st.ID})
	return err
}

func (r *remoteServer) Stop(ctx context.Context) error {
	r.agent.evMu.Lock()
	e := r.agent.exits[r.st.ID]
	delete(r.agent.exits, r.st.ID)
	running := e != nil && e.end(nil) // an asked-for end is no event
	r.agent.evMu.Unlock()
	if !running {
		// It ended already, or its agent did and stopped it then.
		return nil
	}
	_, err := r.agent.call(ctx, agentRequest{Op: opStop, Server: r.st.ID})
	return err
}

// SnapshotHost implements sweeps.HostSampler: the server host's /proc
// through the agent.
func (r *remoteServer) SnapshotHost(ctx context.Context) (*hostmetrics.Snapshot, error) {
	rep, err := r.agent.call(ctx, agentRequest{Op: opSnapshot, Server: r.st.ID})
	if err != nil {
		return nil, err
	}
	return rep.Snapshot, nil
}

// RemoteTuner applies a tuning profile to both hosts of a pair through
// their agents, checks both before each cell (sweeps.TuningCheck) and
// reverts both.
type RemoteTuner struct {
	Agents  map[string]*AgentClient // by role: server, client
	Profile []byte                  // the profile file's text
}

func (t *RemoteTuner) roles() []string { return []string{"server", "client"} }

// Apply tunes every host; save receives {"server": snapshot, "client":
// snapshot} before it returns. A host that fails leaves the others
// reverted.
func (t *RemoteTuner) Apply(ctx context.Context, save func(json.RawMessage) error) (json.RawMessage, error) {
	snaps := map[string]json.RawMessage{}
	for _, role := range t.roles() {
		a := t.Agents[role]
		if a == nil {
			continue
		}
		r, err := a.call(ctx, agentRequest{Op: opTuneApply, Profile: string(t.Profile), DataAddr: addrString(a.Host.DataAddr())})
		if err != nil {
			return nil, errors.Join(err, t.Revert(context.WithoutCancel(ctx)))
		}
		snaps[role] = r.Tuning
	}
	b, err := json.Marshal(snaps)
	if err != nil {
		return nil, err
	}
	if err := save(b); err != nil {
		return nil, errors.Join(err, t.Revert(context.WithoutCancel(ctx)))
	}
	return b, nil
}

// Verify implements sweeps.TuningCheck over both hosts.
func (t *RemoteTuner) Verify(ctx context.Context) (json.RawMessage, int, error) {
	reps := map[string]json.RawMessage{}
	drifts := 0
	for _, role := range t.roles() {
		a := t.Agents[role]
		if a == nil {
			continue
		}
		r, err := a.call(ctx, agentRequest{Op: opTuneVerify})
		if err != nil {
			return nil, 0, err
		}
		reps[role] = r.Tuning
		drifts += r.Drifts
	}
	b, err := json.Marshal(reps)
	return b, drifts, err
}

// Revert restores every host.
func (t *RemoteTuner) Revert(ctx context.Context) error {
	var errs []error
	for _, role := range t.roles() {
		if a := t.Agents[role]; a != nil {
			if _, err := a.call(ctx, agentRequest{Op: opTuneRevert}); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func addrString(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}
