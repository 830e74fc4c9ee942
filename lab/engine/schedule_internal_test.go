package engine

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/fields"
	"github.com/linerate/linerate/lab/pace"
)

// The open loop's bookkeeping on a fake clock: the engine's own schedules
// (planPacing), its window (measureSchedule) and each connection's pacing
// state (due, started, issuedPaced, dropped), driven the way fill drives
// them, with a server whose service time the test chooses. No socket and
// no wall clock: what these tests find is the code's, never the machine's.

// fakeServer is how long the n-th request of a connection takes to serve.
type fakeServer func(n uint64) time.Duration

// noFail is simulateFailing's "no request fails".
const noFail = 0

// simulate runs every connection of w's paced run over the warmup and the
// window on a fake clock, one request in flight per connection (-P 1), and
// returns the worker's open-loop figures.
func simulate(t *testing.T, w lab.Workload, serve fakeServer) openStats {
	t.Helper()
	return simulateFailing(t, w, serve, noFail)
}

// simulateFailing is simulate with every failEvery-th request of a
// connection failing (0: none); each request sent is settled when its
// reply is in, and the requests still owed when the window ends are
// counted as the engine counts them.
func simulateFailing(t *testing.T, w lab.Workload, serve fakeServer, failEvery uint64) openStats {
	t.Helper()
	w = w.Resolve()
	if err := fields.Validate(w); err != nil {
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
		c := &rconn{wk: wk}
		c.reset(e.pacers(unit), w.QueueLimit.D(), false)
		p := &c.pacing
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
			r := req{}
			if r.intended, r.paced = p.started(); r.paced {
				wk.issuedPaced(r.intended, now, false)
			}
			freeAt = now + int64(serve(served))
			served++
			kind := ok
			if failEvery > 0 && served%failEvery == 0 {
				kind = eServer
			}
			wk.settled(&r, kind)
		}
		wk.conns = append(wk.conns, c)
	}
	wk.countUnsent(s.measureEnd)
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
	return intendedIn(e.pacers, w.Connections, s.warmupEnd, s.measureEnd)
}

// intendedIn is how many requests the units' pacers mean to send from
// from (ns) to before to.
func intendedIn(pacers func(int) pace.Pacer, units int, from, to int64) uint64 {
	var n uint64
	for unit := range units {
		p := pacers(unit).(intender)
		for i := uint64(0); ; i++ {
			at, ok := p.Intended(i)
			if !ok || int64(at) >= to {
				break
			}
			n += b2u(int64(at) >= from)
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

// Every request the schedule means to send in the window is exactly one
// of completed, failed, dropped or unsent, whatever the server does: the
// four sum to the schedule's count, and sent is completed + failed. A
// server that keeps up leaves nothing unsent; one that does not leaves
// what it could not serve owed (with a queue limit past the window) or
// dropped (with a short one). Issue 25: 15,000 of 42,000 requests due
// were in neither sent nor dropped.
func TestEveryDueRequestIsAccountedFor(t *testing.T) {
	const rate, conns = 1000, 2
	for _, tc := range []struct {
		name      string
		serve     fakeServer
		limit     time.Duration
		failEvery uint64
		arrival   lab.Arrival
		unsent    bool // some still owed at the end
		dropped   bool
	}{
		{"a server that keeps up", func(uint64) time.Duration { return 100 * time.Microsecond }, time.Second, noFail, lab.ArrivalConstant, false, false},
		{"every 7th fails", func(uint64) time.Duration { return 100 * time.Microsecond }, time.Second, 7, lab.ArrivalConstant, false, false},
		{"a server at half the rate, queue limit past the window", func(uint64) time.Duration { return 4 * time.Millisecond }, 20 * time.Second, noFail, lab.ArrivalConstant, true, false},
		{"a server at half the rate, queue limit 100 ms", func(uint64) time.Duration { return 4 * time.Millisecond }, 100 * time.Millisecond, noFail, lab.ArrivalConstant, true, true},
		{"poisson, a server at 60 %", func(uint64) time.Duration { return 3333 * time.Microsecond }, 20 * time.Second, 5, lab.ArrivalPoisson, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := pacedWorkload(rate, conns, 10*time.Second)
			w.QueueLimit, w.Arrival = lab.Duration(tc.limit), tc.arrival
			due := dueIn(t, w)
			o := simulateFailing(t, w, tc.serve, tc.failEvery)
			if sum := o.completed + o.failed + o.dropped + o.unsent; sum != due {
				t.Errorf("completed %d + failed %d + dropped %d + unsent %d = %d of %d due", o.completed, o.failed, o.dropped, o.unsent, sum, due)
			}
			if o.sent != o.completed+o.failed {
				t.Errorf("sent %d, completed %d + failed %d", o.sent, o.completed, o.failed)
			}
			if (o.unsent > 0) != tc.unsent || (o.dropped > 0) != tc.dropped {
				t.Errorf("unsent %d, dropped %d: want some unsent %v, some dropped %v", o.unsent, o.dropped, tc.unsent, tc.dropped)
			}
			if tc.failEvery > 0 && o.failed < o.sent/tc.failEvery-conns {
				t.Errorf("failed %d of %d sent, every %dth fails", o.failed, o.sent, tc.failEvery)
			}
		})
	}
}

// The queue's growth is the slope of lateness over the window, by when
// requests went: about 0 for a server that keeps up, whatever its
// jitter; the server's shortfall for one that does not (a server at half
// the rate sends at t the request meant for t/2: late by t/2).
func TestLatenessSlopeOnTheSchedule(t *testing.T) {
	const rate, conns = 1000, 2
	rng := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct {
		name   string
		serve  fakeServer
		limit  time.Duration
		lo, hi float64
	}{
		{"keeps up", func(uint64) time.Duration { return time.Millisecond }, time.Second, -0.001, 0.001},
		{"keeps up, jittery", func(uint64) time.Duration { return time.Duration(rng.Int64N(int64(3 * time.Millisecond))) }, time.Second, -0.005, 0.005},
		{"half the rate", func(uint64) time.Duration { return 4 * time.Millisecond }, 20 * time.Second, 0.49, 0.51},
		{"90 % of the rate", func(uint64) time.Duration { return 2222 * time.Microsecond }, 20 * time.Second, 0.09, 0.11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := pacedWorkload(rate, conns, 10*time.Second)
			w.QueueLimit = lab.Duration(tc.limit)
			o := simulate(t, w, tc.serve)
			slope, ok := lab.LatenessSlope(o.lateBins[:], w.Duration.D())
			if !ok || slope < tc.lo || slope > tc.hi {
				t.Errorf("slope %v (%v), want %v to %v", slope, ok, tc.lo, tc.hi)
			}
		})
	}
}

// Issue 25: --rate 10Gbps over -s 1MiB:60,16MiB:30,64MiB:10 -n 20 was
// converted with the weights' mean (11.8 MiB) while the keys' was 9.4:
// 7.77 Gbps delivered at "achieved = offered". The schedule offers the
// bit rate over the keys' mean, and its window holds that many requests.
func TestABitRateConvertsWithTheKeysMean(t *testing.T) {
	mix, err := lab.ParseSizeMix("1MiB:60,16MiB:30,64MiB:10")
	if err != nil {
		t.Fatal(err)
	}
	w := pacedWorkload(0, 2, 10*time.Second)
	w.ValueSz, w.Keyspace, w.Seed = mix, 20, 1
	w.Rate = lab.Rate{BitsPerSec: 10e9}
	keysMean := float64((12*1+7*16+1*64)<<20) / 20
	want := 10e9 / 8 / keysMean
	if got, _ := offered(w.Resolve()); math.Abs(got-want) > 1e-9*want {
		t.Errorf("offered %v requests/s, want 10 Gbps over the keys' mean: %v", got, want)
	}
	if due, want := dueIn(t, w), uint64(want*10); due < want-2 || due > want+2 {
		t.Errorf("%d requests due in 10 s, want %d", due, want)
	}
}

// Issue 25: the probe's idle p99 came from 150 samples (a 3 s quarter-
// warmup at 50/s). The engine's own probe schedule now holds at least
// lab.ProbeIdleSamples GETs alone, before the main load starts, when 30 s
// allow it, and the main load's schedule starts after them.
func TestTheProbeRunsAloneForAThousandGETs(t *testing.T) {
	for _, tc := range []struct {
		probe   float64
		warmup  time.Duration
		atLeast uint64
	}{
		{200, 2 * time.Second, lab.ProbeIdleSamples},
		{50, 12 * time.Second, lab.ProbeIdleSamples},
		{5000, 4 * time.Second, 5000}, // the quarter-warmup holds more
		{10, 2 * time.Second, 300},    // 30 s at most: it cannot
	} {
		w := pacedWorkload(100, 2, 2*time.Second)
		w.Probe = lab.Probe{Size: 100, Rate: lab.Rate{PerSec: tc.probe}}
		w.Warmup = lab.Duration(tc.warmup)
		w = w.Resolve()
		e := &engine{w: w}
		if err := e.planPacing(); err != nil {
			t.Fatal(err)
		}
		s := measureSchedule(w, time.Time{})
		alone := intendedIn(e.probePacers, lab.ProbeConnections, s.idleStart, s.mainStart)
		if alone < tc.atLeast || (tc.atLeast < lab.ProbeIdleSamples && alone >= lab.ProbeIdleSamples) {
			t.Errorf("probe %v/s, warmup %s: %d GETs alone, want at least %d", tc.probe, tc.warmup, alone, tc.atLeast)
		}
		first, _ := e.pacers(0).(intender).Intended(0)
		if int64(first) < s.mainStart || s.warmupEnd-s.mainStart != int64(tc.warmup/2) {
			t.Errorf("probe %v/s: the main load starts at %s, its warmup %s-%s", tc.probe, first, time.Duration(s.mainStart), time.Duration(s.warmupEnd))
		}
	}
}
