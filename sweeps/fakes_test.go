package sweeps

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/linerate/linerate/lab"
)

// fakeServer is an in-process RunningServer. crash() makes Exited yield.
type fakeServer struct {
	ver     PlanVersion
	exited  chan error
	once    sync.Once
	flushes *int
	log     *[]string
	mu      *sync.Mutex
}

func (s *fakeServer) Addr() (string, int) { return "127.0.0.1", 7000 }
func (s *fakeServer) PID() int            { return 0 }
func (s *fakeServer) Identity() Resolved {
	return Resolved{Name: "valkey", Version: s.ver.Segment}
}
func (s *fakeServer) Info(context.Context) (map[string]string, error) {
	return map[string]string{"valkey_version": s.ver.Segment}, nil
}
func (s *fakeServer) FlushAll(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	*s.flushes++
	*s.log = append(*s.log, "flush")
	return nil
}
func (s *fakeServer) Exited() <-chan error { return s.exited }
func (s *fakeServer) Stop(context.Context) error {
	s.crash(nil)
	s.mu.Lock()
	*s.log = append(*s.log, "stop "+s.ver.Segment)
	s.mu.Unlock()
	return nil
}
func (s *fakeServer) crash(err error) {
	s.once.Do(func() {
		if err != nil {
			s.exited <- err
		}
		close(s.exited)
	})
}

type fakeStarter struct {
	mu      sync.Mutex
	log     []string
	flushes int
	failFor map[string]bool // version segments that do not start
	current *fakeServer
}

func (f *fakeStarter) Start(_ context.Context, v PlanVersion, _ string) (RunningServer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, "start "+v.Segment)
	if f.failFor[v.Segment] {
		return nil, errors.New("binary not found")
	}
	f.current = &fakeServer{ver: v, exited: make(chan error, 1), flushes: &f.flushes, log: &f.log, mu: &f.mu}
	return f.current, nil
}

// fakeBench returns results by cell; behaviour is chosen by the cell's
// address in the workload-to-ID map the test fills.
type fakeBench struct {
	mu      sync.Mutex
	starter *fakeStarter
	calls   []lab.Workload
	// per call index (0-based across the run): what to do
	do    map[int]string
	delay time.Duration
}

func (b *fakeBench) Bench(ctx context.Context, w lab.Workload, mark func(lab.Phase)) (*lab.Result, error) {
	b.mu.Lock()
	i := len(b.calls)
	b.calls = append(b.calls, w)
	action := b.do[i]
	b.mu.Unlock()
	b.starter.mu.Lock()
	b.starter.log = append(b.starter.log, fmt.Sprintf("bench %s %s", w.Ratio, w.ValueSz))
	srv := b.starter.current
	b.starter.mu.Unlock()
	if mark != nil {
		mark(lab.PhaseMeasure)
	}
	if b.delay > 0 {
		select {
		case <-time.After(b.delay):
		case <-ctx.Done():
		}
	}
	res := fakeResult(w, 10)
	switch action {
	case "crash":
		srv.crash(errors.New("signal: killed"))
		<-ctx.Done() // the runner cancels the bench when the server ends
		res.Stop = lab.Stop{Reason: lab.StopServerLost, Error: "connection refused"}
		return res, errors.New("server lost")
	case "killed at setup":
		// The server dies while the bench connects; the process's exit is
		// reported only after the bench has given up (a loaded machine
		// reaps it late).
		time.AfterFunc(100*time.Millisecond, func() { srv.crash(errors.New("signal: killed")) })
		res.Stop = lab.Stop{Reason: lab.StopSetupFailed, Error: "open connection 1: connection refused"}
		return res, errors.New("setup failed")
	case "timeouts":
		res.Errors = map[lab.ErrorKind]uint64{lab.ErrTimeout: 3}
		res.Stop = lab.Stop{Reason: lab.StopErrors}
		return res, nil
	case "verify":
		for _, o := range res.Ops {
			o.Verify.Failed = 2
		}
		return res, nil
	case "client":
		res.Client.MaxWorkerBusy = 0.97
	case "error":
		return nil, errors.New("connect: refused")
	case "slow":
		for _, o := range res.Ops {
			o.Ops = 0
		}
		return res, nil
	}
	if mark != nil {
		mark(lab.PhaseDrain)
	}
	return res, nil
}

func fakeResult(w lab.Workload, gbps float64) *lab.Result {
	r := &lab.Result{Schema: lab.SchemaVersion, Workload: w,
		Window: lab.Window{Measured: w.Duration, Requested: w.Duration},
		Ops:    map[lab.Op]*lab.OpResult{}, Stop: lab.Stop{Reason: lab.StopCompleted}}
	for _, op := range w.Ops() {
		r.Ops[op] = &lab.OpResult{Ops: 100, Gbps: gbps, Latency: lab.LatencySummary{Count: 100, P99: 1500}}
	}
	return r
}
