package engine

import (
	"bufio"
	"bytes"
	"context"
	"os/exec"
	"runtime/trace"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/lab/sink"
	"github.com/linerate/linerate/lab/sink/sinktest"
)

// No socket call on the data path, the raw engine's or the sink's, enters
// the Go scheduler's system-call state. A goroutine found in a system call
// past its 10 ms time slice has its P taken back by the runtime's monitor
// (sysmon), which then polls every 20 µs for a while: before rawsock's
// calls were raw (commit c68ddd6's parent), a bench streaming 8 MiB GETs
// woke its other threads 3,100-4,200 times a second here, 6.5-11 times a
// request, where the raw calls leave about 200 a second of timers and the
// monitor's idle tick. Those wake-ups are rates the machine's load moves
// (a starved run saw the idle floor rise from 200 to 370 a second while
// its requests fell to 66 a second), so `make bench` prints them; this
// test judges their cause, which no load moves: the runtime's execution
// trace records every call that tells the scheduler (Running->Syscall),
// and a run of n requests must record far fewer than n. Through
// syscall.Syscall, each request makes at least one (its write, its read).
func TestDataPathSocketCallsBypassTheScheduler(t *testing.T) {
	cases := []struct {
		name    string
		ratio   lab.Ratio
		threads int // the sink's Server.Threads: 0, its own threads; -1, Go's netpoller
	}{
		{"GET, sink on its own thread", lab.Ratio{Gets: 1}, 0},
		{"SET, sink on its own thread", lab.Ratio{Sets: 1}, 0},
		{"GET, sink on Go's netpoller", lab.Ratio{Gets: 1}, -1},
	}
	// The three run side by side in one trace (a trace is the process's):
	// any one of them through the scheduler makes a call a request, three
	// times what the bound below allows for all three.
	var engines []*engine
	for _, tc := range cases {
		w := lab.Workload{Host: "127.0.0.1", Connections: 1, Threads: 1, Pipeline: 2, Keyspace: 8,
			ValueSz: lab.OneSize(1 << 20), Ratio: tc.ratio, Seed: 5, Verify: lab.VerifyNone,
			// paced, as the load is not what is judged; 3 s, as a freeze of make test's
			// busy machine can hold a shorter window wholly
			Duration: lab.Duration(3 * time.Second), Rate: lab.Rate{PerSec: 100},
			QueueLimit: lab.Duration(labtest.PacedQueueLimit)}
		w.Port = serveSink(t, w, tc.threads)
		e := plannedEngine(t, w)
		defer e.shutdown()
		engines = append(engines, e)
	}
	requests, all := tracedMeasure(t, engines)
	t.Logf("requests %v; calls through the scheduler: %v", requests, tally(all))
	var total uint64
	for i, n := range requests {
		if n < 30 {
			t.Fatalf("%s: %d requests in the window: too few to judge", cases[i].name, n)
		}
		total += n
	}
	// The sink's idle wait tells the scheduler on purpose, once a
	// connection has had no request for 50 ms (lab/sink/thread.go): a
	// freeze of the machine's makes one, no request does.
	calls := slices.DeleteFunc(all, func(f string) bool { return f == idleWait })
	if len(calls) > int(total/10) {
		t.Errorf("%d of the runs' socket calls went through the scheduler for %d requests, from %v; want none on the data path", len(calls), total, tally(calls))
	}
}

// idleWait is the sink's wait on a connection with no request coming.
const idleWait = "github.com/linerate/linerate/lab/sink.(*threadConn).sleep"

// serveSink serves an in-process sink for w's keys on a loopback port
// until the test ends, its connections on threads of their own or, with
// threads < 0, on Go's netpoller.
func serveSink(t *testing.T, w lab.Workload, threads int) int {
	t.Helper()
	s := sink.New(w.Resolve().ValueSz, w.Seed, w.Keyspace, 0)
	s.Threads = threads
	return sinktest.Serve(t, s).Port
}

// tracedMeasure runs the engines' measured windows side by side under
// the runtime's execution trace and returns the requests each completed
// and, for each call that entered the scheduler's system-call state while
// they ran, the function of this module nearest the call.
func tracedMeasure(t *testing.T, engines []*engine) (requests []uint64, calls []string) {
	t.Helper()
	var tr bytes.Buffer // in memory: a file's writes would be system calls of the run's own
	if err := trace.Start(&tr); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, e := range engines {
		wg.Go(func() { e.measure(context.Background(), nil, nil) })
	}
	wg.Wait()
	trace.Stop()
	for _, e := range engines {
		requests = append(requests, completed(e, phMeasure))
	}
	return requests, syscallsIn(t, tr.Bytes())
}

// syscallsIn reads an execution trace with `go tool trace -d=parsed` and
// returns, for each goroutine's Running->Syscall transition, the first
// frame of its stack in this module ("elsewhere" when none is).
func syscallsIn(t *testing.T, data []byte) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("reading the execution trace needs the go command: %v", err)
	}
	cmd := exec.Command(goBin, "tool", "trace", "-d=parsed", "/dev/stdin")
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go tool trace -d=parsed: %v", err)
	}
	var calls []string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.Contains(line, " StateTransition ") && strings.Contains(line, " Running->Syscall "):
			calls, in = append(calls, "elsewhere"), true
		case !strings.HasPrefix(line, "\t"):
			in = in && (line == "Stack=" || line == "TransitionStack=")
		case in && strings.HasPrefix(line, "\tgithub.com/linerate/linerate/"):
			calls[len(calls)-1], in = strings.Fields(line)[0], false
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return calls
}

// tally counts each function's calls.
func tally(calls []string) map[string]int {
	m := map[string]int{}
	for _, c := range calls {
		m[c]++
	}
	return m
}
