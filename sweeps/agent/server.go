// Package agent is the protocol between a coordinator and `linerate
// agent` on each remote host of a pair (or network namespace): its
// messages, the server side (Agent.Serve) and the client side
// (AgentClient, RemoteStarter, RemoteTuner).
package agent

// The agent is linerate running on a remote host of a pair (`linerate
// agent`), driven by the coordinator over one command session: JSON lines
// in on standard input, JSON lines out on standard output. It starts and
// stops servers with the same Starter a local run uses, flushes them from
// its own side of the network, samples its host's /proc for the cell
// windows and applies, checks and reverts the tuning profile. When its
// input ends (the coordinator finished, crashed or lost the connection) it
// stops its servers and reverts its tuning: a host is never left tuned and
// serving by a run that is gone.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/start"
	"github.com/linerate/linerate/tuning"
)

// Agent serves one coordinator on this host.
type Agent struct {
	// Starter starts servers here (store versions from this host's store,
	// binaries by their path here, images with this host's docker).
	Starter *start.Starter
	// Root is where /proc and /sys are; "" is "/".
	Root string
	// StateDir keeps the tuning snapshot on this host too, so `linerate
	// tune revert --snapshot` can undo it by hand if even the agent dies.
	StateDir string
	// StopTimeout bounds stopping the servers when the input ends.
	StopTimeout time.Duration

	out     sync.Mutex
	enc     *json.Encoder
	gone    chan struct{} // closed when a reply cannot be written
	goneOne sync.Once
	servers map[int]sweeps.RunningServer
	nextID  int
	tuner   *tuning.Tuner
	lock    *os.File // held on StateDir while this agent may tune
	// kernelNS is the machine's network namespace, held open from a
	// kernel-scope apply on, so the revert reaches it after the
	// coordinator that named it is gone.
	kernelNS *os.File

	metricServers agentServers // what HostMetrics covers (live.go)
	nics          agentNICs    // nic.go
}

func (a *Agent) root() string {
	if a.Root == "" {
		return "/"
	}
	return a.Root
}

// send writes one line; a failed write means the coordinator is gone.
func (a *Agent) send(r agentReply) {
	a.out.Lock()
	defer a.out.Unlock()
	if err := a.enc.Encode(r); err != nil {
		a.goneOne.Do(func() { close(a.gone) })
	}
}

// Serve answers requests from in until it ends, a reply cannot be written
// or ctx is cancelled, then stops every server it started and reverts its
// tuning. The request being worked on is cancelled as soon as the input
// ends: a coordinator that is gone does not wait for an install or a pull.
// The caller must ignore SIGPIPE, so a closed output is an error here and
// not the end of the process before the cleanup.
func (a *Agent) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	a.enc = json.NewEncoder(out)
	a.gone = make(chan struct{})
	a.servers = map[int]sweeps.RunningServer{}
	if a.Starter == nil {
		a.Starter = &start.Starter{}
	}
	defer a.cleanup(ctx)
	reqCtx, endInput := context.WithCancel(ctx)
	defer endInput()
	a.send(agentReply{Event: "hello", PID: os.Getpid()})
	lines := make(chan []byte, 16)
	readErr := make(chan error, 1)
	go func() {
		defer endInput()
		// Closed after the last line: the loop answers every line read
		// before it sees the end (a select on a separate end signal may
		// pick the end first and leave requests unanswered).
		defer close(lines)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			select {
			case lines <- append([]byte(nil), sc.Bytes()...):
			case <-reqCtx.Done():
				return
			}
		}
		readErr <- sc.Err()
	}()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-a.gone:
			return errors.New("the coordinator is gone (output closed)")
		case line, ok := <-lines:
			if !ok {
				select {
				case err := <-readErr:
					return err
				default: // the reader stopped for a cancelled context
					return ctx.Err()
				}
			}
			var req envelope
			if err := json.Unmarshal(line, &req); err != nil {
				a.send(agentReply{Error: fmt.Sprintf("agent: request is not JSON: %v", err)})
				continue
			}
			rep, after := a.handle(reqCtx, req.Op, line)
			rep.ID = req.ID
			a.send(rep)
			if after != nil {
				after()
			}
		}
	}
}

// handle answers one request; after, when set, runs once the answer is
// sent (a server's exit event must not overtake the answer to its start).
func (a *Agent) handle(ctx context.Context, op string, line []byte) (rep agentReply, after func()) {
	rep = a.answer(ctx, op, line)
	if rep.Started == nil {
		return rep, nil
	}
	id, srv := rep.Started.ID, a.servers[rep.Started.ID]
	return rep, func() {
		go func() {
			for err := range srv.Exited() {
				msg := "exited"
				if err != nil {
					msg = err.Error()
				}
				a.send(agentReply{Event: "exited", Server: id, Error: msg})
			}
		}()
	}
}

func (a *Agent) revert(ctx context.Context) error {
	if a.tuner == nil {
		return nil
	}
	if err := a.tuner.Revert(ctx); err != nil {
		return err
	}
	a.tuner = nil
	return nil
}

// lockState makes this agent the only one that tunes this host from
// StateDir. An earlier agent may still hold it: one whose connection is
// half open and has not noticed yet, or one that hangs. It is asked to end
// (SIGTERM: it stops its servers and reverts its tuning, then exits), and
// the lock is taken once it has.
func (a *Agent) lockState(ctx context.Context) error {
	if a.StateDir == "" || a.lock != nil {
		return nil
	}
	if err := os.MkdirAll(a.StateDir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(a.StateDir, "lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(90 * time.Second)
	asked := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return fmt.Errorf("lock %s: %w", path, err)
		}
		b, _ := os.ReadFile(path)
		holder, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if !asked && holder > 1 && holder != os.Getpid() {
			fmt.Fprintf(os.Stderr, "linerate agent: agent %d still holds %s; asking it to end\n", holder, path)
			_ = syscall.Kill(holder, syscall.SIGTERM)
			asked = true
		}
		if time.Now().After(deadline) {
			f.Close()
			return fmt.Errorf("another linerate agent (pid %d) still holds the tuning of this host (%s)", holder, path)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	a.lock = f
	return nil
}

// cleanup runs when the coordinator is gone: a fresh context, as the
// caller's is likely cancelled.
func (a *Agent) cleanup(ctx context.Context) {
	d := a.StopTimeout
	if d <= 0 {
		d = time.Minute
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d)
	defer cancel()
	for id, srv := range a.servers {
		if err := srv.Stop(cctx); err != nil {
			fmt.Fprintf(os.Stderr, "linerate agent: stop server %d: %v\n", id, err)
		}
		delete(a.servers, id)
	}
	if err := a.revert(cctx); err != nil {
		fmt.Fprintf(os.Stderr, "linerate agent: %v (snapshot: %s)\n", err, filepath.Join(a.StateDir, tuning.SnapshotFile))
	}
	if a.kernelNS != nil {
		a.kernelNS.Close()
	}
	a.nics.close()
	if a.lock != nil {
		a.lock.Close() // releases the flock: the next agent may tune
	}
}

// maxSections bounds an info request: the runner asks for three at most.
const maxSections = 8

// maxKeySample bounds a key-memory request: the runner asks for 16.
const maxKeySample = 1024

var sectionRE = regexp.MustCompile(`^[a-z]{1,32}$`)

// checkSections refuses an info request that names anything but a few
// INFO sections: the request comes off the wire.
func checkSections(secs []string) error {
	if len(secs) == 0 || len(secs) > maxSections {
		return fmt.Errorf("info: name 1 to %d INFO sections, not %d", maxSections, len(secs))
	}
	for _, s := range secs {
		if !sectionRE.MatchString(s) {
			return fmt.Errorf("info: %q is not an INFO section name", s)
		}
	}
	return nil
}
