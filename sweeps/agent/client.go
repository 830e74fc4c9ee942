package agent

// The coordinator's side of the agent: one long command session per remote
// host, requests answered in order, server exits reported as events.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/tuning"
)

// AgentClient drives `linerate agent` on a host over one session, started
// on first use.
type AgentClient struct {
	Host infra.Host
	// StateDir is the agent's directory on the host for its tuning snapshot
	// (relative to the login directory); default .cache/linerate/agent.
	StateDir string
	// CallTimeout bounds one request; default 2 minutes (a server start
	// with a large maxmemory, a tuning apply). A request that runs out
	// ends the session: an agent that does not answer is not waited for
	// again.
	CallTimeout time.Duration
	// Args are more `linerate agent` flags (--store, --docker).
	Args []string
	// TuneScope is the part of its host the agent tunes: all of it (the
	// zero value), or, for hosts that are namespaces of one kernel, the
	// kernel's settings once (tuning.ScopeKernel) and each other
	// namespace's own (tuning.ScopeNamespace).
	TuneScope tuning.Scope
	// KernelNetns, with tuning.ScopeKernel, is the machine's network
	// namespace as a path on the host, where the kernel-wide net.*
	// sysctls are set.
	KernelNetns string

	mu   sync.Mutex // one request at a time; guards sess
	sess *session
	// sudo runs the agent through `sudo -n` (a login user that is not
	// root but may become it: tuning writes /proc/sys and /proc/irq).
	sudo   []string
	probed bool
	root   bool
	home   string // the login user's home directory there
}

// notRoot says the agent runs without root (known once a session started).
func (c *AgentClient) notRoot() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.probed && !c.root && c.sudo == nil
}

// session is one run of the agent; a new one starts after it ended.
type session struct {
	closing bool // endSession was called; guarded by the client's mu
	stdin   *io.PipeWriter
	cancel  context.CancelFunc
	stderr  *infra.TailBuffer

	mu      sync.Mutex // guards the fields below
	done    chan struct{}
	endErr  error
	nextID  int
	pending map[int]chan agentReply
	exits   map[int]*serverEnd // by server ID, until stopped
}

// timeout bounds a request: CallTimeout, or for the slow operations (a
// store install or an image pull on start and resolve, a tuning apply that
// may wait for an earlier agent) 15 minutes unless CallTimeout is longer.
func (c *AgentClient) timeout(op string) time.Duration {
	d := c.CallTimeout
	if d <= 0 {
		d = 2 * time.Minute
	}
	switch op {
	case opStart, opResolve, opTuneApply:
		d = max(d, 15*time.Minute)
	}
	return d
}

// endSession ends s gently: its input is closed so the agent stops its
// servers and reverts its tuning, and only if it has not ended after
// grace is the session killed (a hung agent). Later requests get a fresh
// agent at once; it waits for the old one to let go of the tuning.
// c.mu is held.
func (c *AgentClient) endSession(s *session, grace time.Duration) {
	if c.sess == s {
		c.sess = nil
	}
	s.closing = true
	s.stdin.Close()
	go func() {
		select {
		case <-s.done:
		case <-time.After(grace):
		}
		s.cancel()
	}()
}

// session returns the running session, starting one when there is none or
// the last one ended (its servers were reported gone); c.mu is held.
func (c *AgentClient) session(ctx context.Context) (*session, error) {
	if s := c.sess; s != nil {
		select {
		case <-s.done:
			c.endSession(s, 0)
		default:
			return s, nil
		}
	}
	bin, err := c.Host.Linerate(ctx)
	if err != nil {
		return nil, fmt.Errorf("agent on %s: %w", c.Host.Name(), err)
	}
	if !c.probed {
		// Tuning needs root: a login user that is not root runs the agent
		// through passwordless sudo when it has it.
		out, err := c.Host.Run(ctx, "sh", "-c", `id -u; echo "$HOME"; if [ "$(id -u)" != 0 ] && sudo -n true 2>/dev/null; then echo sudo; fi`)
		if err != nil {
			return nil, fmt.Errorf("agent on %s: who am I: %w", c.Host.Name(), err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		c.root = lines[0] == "0"
		if len(lines) > 1 && strings.HasPrefix(lines[1], "/") {
			c.home = lines[1]
		}
		if len(lines) > 2 && lines[2] == "sudo" {
			c.sudo = []string{"sudo", "-n"}
		}
		c.probed = true
	}
	dir := c.StateDir
	if dir == "" {
		dir = ".cache/linerate/agent"
	}
	var extra []string
	if c.home != "" {
		// Absolute, so sudo (which sets HOME to root's) keeps the login
		// user's directories, and its store of server versions.
		if !path.IsAbs(dir) {
			dir = path.Join(c.home, dir)
		}
		if c.sudo != nil && !slices.Contains(c.Args, "--store") {
			extra = []string{"--store", path.Join(c.home, ".cache", "linerate")}
		}
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	// The session outlives any one request; Close ends it.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &session{stdin: inW, cancel: cancel, stderr: &infra.TailBuffer{Max: 4096},
		done: make(chan struct{}), pending: map[int]chan agentReply{}, exits: map[int]*serverEnd{}}
	c.sess = s
	argv := append(append(append(append([]string(nil), c.sudo...), bin, "agent", "--state-dir", dir), extra...), c.Args...)
	go func() {
		err := c.Host.Exec(sctx, infra.Command{Argv: argv, Stdin: inR, Stdout: outW, Stderr: s.stderr, Once: true})
		if err == nil {
			// A clean end: Close asked for it.
			outW.Close()
			inR.Close()
			return
		}
		if tail := infra.LastLine(s.stderr.String()); tail != "" {
			err = fmt.Errorf("%w; agent stderr: %s", err, tail)
		}
		outW.CloseWithError(err)
		inR.CloseWithError(err)
	}()
	go s.read(outR, c.Host.Name())
	return s, nil
}

// read dispatches the agent's lines until the session ends.
func (s *session) read(out io.Reader, host string) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var r agentReply
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			continue // not ours (a shell's greeting); replies are JSON
		}
		s.mu.Lock()
		switch {
		case r.Event == "exited":
			if e := s.exits[r.Server]; e != nil {
				e.end(errors.New(r.Error))
			}
		case r.ID != 0:
			if r.Started != nil {
				// Registered before the next line is read: an exit
				// event follows its start's answer.
				s.exits[r.Started.ID] = &serverEnd{ch: make(chan error, 1)}
			}
			if ch := s.pending[r.ID]; ch != nil {
				ch <- r
				delete(s.pending, r.ID)
			}
		}
		s.mu.Unlock()
	}
	err := sc.Err()
	if err == nil {
		err = io.EOF
	}
	s.mu.Lock()
	s.endErr = err
	// The agent stops its servers when its input ends.
	for _, e := range s.exits {
		e.end(fmt.Errorf("agent on %s ended (%v); it stopped its server", host, err))
	}
	close(s.done)
	s.mu.Unlock()
}

func (s *session) ended() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endErr
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

// errSessionGone is a request for a session that has ended: what it knew
// (a server, the tuning) went with it.
var errSessionGone = errors.New("its agent session ended")

// call sends one request and waits for its answer. With want nil it uses
// the current session (started when needed); with want set, only that
// session, failing with errSessionGone once it ended. The answer comes with
// the session it came from.
func (c *AgentClient) call(ctx context.Context, req request, want *session) (agentReply, *session, error) {
	op := req.op()
	c.mu.Lock()
	defer c.mu.Unlock()
	s := want
	if s == nil {
		var err error
		if s, err = c.session(ctx); err != nil {
			return agentReply{}, nil, err
		}
	}
	if want != nil && want.closing {
		return agentReply{}, s, fmt.Errorf("%s on %s: %w (it was ended)", op, c.Host.Name(), errSessionGone)
	}
	select {
	case <-s.done:
		if want != nil {
			return agentReply{}, s, fmt.Errorf("%s on %s: %w (%v)", op, c.Host.Name(), errSessionGone, s.ended())
		}
	default:
	}
	s.mu.Lock()
	s.nextID++
	id := s.nextID
	ch := make(chan agentReply, 1)
	s.pending[id] = ch
	s.mu.Unlock()
	forget := func() {
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
	}
	line, err := encodeRequest(id, req)
	if err != nil {
		forget()
		return agentReply{}, s, err
	}
	if _, err := s.stdin.Write(append(line, '\n')); err != nil {
		forget()
		return agentReply{}, s, fmt.Errorf("agent on %s: %s: %w", c.Host.Name(), op, err)
	}
	t := time.NewTimer(c.timeout(op))
	defer t.Stop()
	select {
	case r := <-ch:
		if r.Error != "" {
			return r, s, fmt.Errorf("%s on %s: %s", op, c.Host.Name(), r.Error)
		}
		return r, s, nil
	case <-s.done:
		forget()
		return agentReply{}, s, fmt.Errorf("%s on %s: %w (%v)", op, c.Host.Name(), errSessionGone, s.ended())
	case <-ctx.Done():
		forget()
		return agentReply{}, s, fmt.Errorf("agent on %s: %s: %w", c.Host.Name(), op, ctx.Err())
	case <-t.C:
		forget()
		// A hung agent or a half-open connection: end the session, so
		// the next request gets a fresh agent instead of waiting again.
		c.endSession(s, 2*time.Minute)
		return agentReply{}, s, fmt.Errorf("agent on %s: %s: no answer after %v; session ended", c.Host.Name(), op, c.timeout(op))
	}
}

// Close ends the session: the agent sees its input end, stops what it
// started and reverts its tuning, then exits.
func (c *AgentClient) Close(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sess
	if s == nil {
		return nil
	}
	c.sess = nil
	s.stdin.Close()
	select {
	case <-s.done:
	case <-ctx.Done():
	}
	s.cancel()
	if err := s.ended(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("agent on %s: %v", c.Host.Name(), err)
	}
	return nil
}

// Facts are the host's facts as its agent reads them, with the price of a
// page fault there when faultCost is set, and the host's clock offset.
func (c *AgentClient) Facts(ctx context.Context, role string, faultCost bool) (sweeps.HostFacts, error) {
	r, _, err := c.call(ctx, factsRequest{Role: role, FaultCost: faultCost}, nil)
	got := time.Now()
	if err != nil {
		return sweeps.HostFacts{}, err
	}
	if r.Facts == nil {
		return sweeps.HostFacts{}, fmt.Errorf("facts of %s: empty answer", c.Host.Name())
	}
	f := *r.Facts
	if !r.Now.IsZero() {
		// The agent reads its clock just before answering (after the
		// fault-cost measurement): against the receipt, the offset is
		// right to within the one-way latency of the SSH connection.
		f.ClockOffset = r.Now.Sub(got)
	}
	return f, nil
}
