package engine

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
)

// The open loop's bookkeeping on a fake clock: the engine's own schedules
// (planPacing), its window (measureSchedule) and each connection's pacing
// state (due, started, issuedPaced, dropped), driven the way fill drives
// them, with a server whose service time the test chooses. No socket and
// no wall clock: what these tests find is the code's, never the machine's.

// fakeServer is how long the n-th request of a connection takes to serve.
type fakeServer func(n uint64) time.Duration

// simulate runs every connection of w's paced run over the warmup and the
// window on a fake clock, one request in flight per connection (-P 1), and
// returns the worker's open-loop figures.
func simulate(t *testing.T, w lab.Workload, serve fakeServer) openStats {
	t.Helper()
	w = w.Resolve()
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	e := &engine{w: w}
	if err := e.planPacing(); err != nil {
		t.Fatal(err)
	}
	if e.pacers == nil {
		t.Fatal("a paced workload without pacers")
	}
	s := measureSchedule(w, time.Time{})
	wk := &worker{w: &e.w, sched: s, stop: new(atomic.Bool)}
	wk.prepareOpen(&e.w, s, false)
	for unit := range w.Connections {
		var p pacing
		p.reset(e.pacers(unit), w.QueueLimit.D(), false)
		var now, freeAt int64
		for served := uint64(0); ; {
			now = max(now, freeAt) // the one slot frees when the reply is in
			if !wk.issuing(now) || p.stopped {
				break
			}
			if !p.due(wk, now) {
				if p.stopped {
					break
				}
				now = max(now, p.dueAt) // the loop sleeps until then
				continue
			}
			if at, paced := p.started(); paced {
				wk.issuedPaced(at, now, false)
			}
			freeAt = now + int64(serve(served))
			served++
		}
	}
	return wk.open
}

// dueIn is how many requests w's schedule means to send in its window.
func dueIn(t *testing.T, w lab.Workload) uint64 {
	t.Helper()
	w = w.Resolve()
	e := &engine{w: w}
	if err := e.planPacing(); err != nil {
		t.Fatal(err)
	}
	s := measureSchedule(w, time.Time{})
	var n uint64
	for unit := range w.Connections {
		p := e.pacers(unit).(intender)
		for i := uint64(0); ; i++ {
			at, ok := p.Intended(i)
			if !ok || int64(at) >= s.measureEnd {
				break
			}
			n += b2u(s.inWindow(int64(at)))
		}
	}
	return n
}

func pacedWorkload(rate float64, conns int, d time.Duration) lab.Workload {
	return lab.Workload{Host: "127.0.0.1", Port: 1, Connections: conns, Threads: 1, Keyspace: 8, ValueSz: lab.OneSize(4096),
		Rate: lab.Rate{PerSec: rate}, Duration: lab.Duration(d), Seed: 3}
}

// Over a minute at 1,000 requests/s on two connections, the engine sends
// every request its schedule holds, whatever its sends cost, as long as
// the server keeps up on average: a late request goes at once and the
// schedule does not move. Late requests are counted, never skipped.
func TestScheduleDoesNotDriftOverAMinute(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name     string
		serve    fakeServer
		arrival  lab.Arrival
		someLate bool
	}{
		{"instant server", func(uint64) time.Duration { return 0 }, lab.ArrivalConstant, false},
		{"1.5 ms each", func(uint64) time.Duration { return 1500 * time.Microsecond }, lab.ArrivalConstant, false},
		{"a 200 ms stall every 5000", func(n uint64) time.Duration {
			if n%5000 == 4999 {
				return 200 * time.Millisecond
			}
			return 100 * time.Microsecond
		}, lab.ArrivalConstant, true},
		{"random 0-2.4 ms", func(uint64) time.Duration { return time.Duration(rng.Int64N(int64(2400 * time.Microsecond))) }, lab.ArrivalConstant, true},
		{"poisson, 1 ms each", func(uint64) time.Duration { return time.Millisecond }, lab.ArrivalPoisson, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := pacedWorkload(1000, 2, time.Minute)
			w.Arrival = tc.arrival
			due := dueIn(t, w)
			if tc.arrival == lab.ArrivalConstant && due != 60_000 {
				t.Fatalf("the schedule holds %d requests in 60 s at 1000/s", due)
			}
			o := simulate(t, w, tc.serve)
			if o.sent != due || o.dropped != 0 {
				t.Errorf("sent %d, dropped %d of the %d due", o.sent, o.dropped, due)
			}
			if (o.late > 0) != tc.someLate {
				t.Errorf("%d late of %d: want late ones %v", o.late, o.sent, tc.someLate)
			}
			if o.late > o.sent/2 {
				t.Errorf("%d of %d late: a server that keeps up on average leaves most on time", o.late, o.sent)
			}
		})
	}
}

// A server slower than the offered rate: with a queue limit every request
// due in the window is sent or dropped (but the few still queued at its
// end, at most a limit's worth); with a limit longer than the window the
// queue grows, nothing is dropped, and the requests sent fall behind by
// what the server could not serve.
func TestScheduleAgainstASlowServer(t *testing.T) {
	const rate, conns, service = 1000, 2, 4 * time.Millisecond // the server: 500/s
	slow := func(uint64) time.Duration { return service }
	w := pacedWorkload(rate, conns, 10*time.Second)
	due := dueIn(t, w)
	served := uint64(conns) * uint64(10*time.Second/service)

	w.QueueLimit = lab.Duration(20 * time.Second)
	o := simulate(t, w, slow)
	if o.dropped != 0 || o.sent != served || o.late < o.sent-uint64(conns)*2 {
		t.Errorf("queue limit past the window: sent %d (the server takes %d), dropped %d, late %d", o.sent, served, o.dropped, o.late)
	}

	w.QueueLimit = lab.Duration(100 * time.Millisecond)
	o = simulate(t, w, slow)
	// Still queued when the window ends: those due in its last queue
	// limit and service time, not yet sent nor judged too late.
	queued := uint64(rate*(w.QueueLimit.D()+service).Seconds()) + conns
	if o.sent != served || o.sent+o.dropped > due || o.sent+o.dropped+queued < due {
		t.Errorf("queue limit 100 ms: sent %d + dropped %d of %d due (at most %d queued at the end)", o.sent, o.dropped, due, queued)
	}
}
