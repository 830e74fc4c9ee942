package engine

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/lab/pace"
)

// scripted is a test pacer: nothing before notBefore, then requests until
// limit were started. It keeps what it was asked.
type scripted struct {
	notBefore time.Duration
	limit     uint64
	mu        sync.Mutex
	asked     []time.Duration
	sents     []uint64
}

func (p *scripted) Pace(elapsed time.Duration, sent uint64) (time.Duration, bool) {
	p.mu.Lock()
	p.asked, p.sents = append(p.asked, elapsed), append(p.sents, sent)
	p.mu.Unlock()
	switch {
	case sent >= p.limit:
		return 0, true
	case elapsed < p.notBefore:
		return p.notBefore - elapsed, false
	}
	return 0, false
}

// Both engines start requests only when their units' pacers let them (a
// raw connection, a valkey-go worker each): not before a wait has passed,
// and no more once the pacer stops.
func TestEnginesFollowThePacer(t *testing.T) {
	t.Parallel()
	layout := lab.NewValueLayout(4096, 3)
	for _, name := range []string{lab.EngineRaw, lab.EngineValkeyGo} {
		t.Run(name, func(t *testing.T) {
			p, _ := recordingPeer(t, layout)
			w := lab.Workload{Host: "127.0.0.1", Port: p.Port, Connections: 2, Pipeline: 3, Threads: 1, Keyspace: 8,
				ValueSz: lab.OneSize(lab.Size(layout.Size)), Seed: layout.Seed, Engine: name,
				// The window opens at 150 ms and lasts far longer than
				// the test: the pacer's stop is what ends the run.
				Warmup: lab.Duration(150 * time.Millisecond), Duration: lab.Duration(time.Minute),
				RequestTimeout: lab.Duration(labtest.RequestTimeout)}.Resolve()
			e, err := openEngine(w, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer e.shutdown()
			var mu sync.Mutex
			pacers := map[int]*scripted{}
			e.pacers = func(unit int) pace.Pacer {
				mu.Lock()
				defer mu.Unlock()
				pacers[unit] = &scripted{notBefore: 200 * time.Millisecond, limit: 4}
				return pacers[unit]
			}
			res := newResult(w, Options{})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			e.measure(ctx, nil, nil)
			e.collect(res)
			if ctx.Err() != nil {
				t.Fatal("the run did not end when the pacers stopped")
			}
			units := w.Connections // raw: one unit per connection
			if name == lab.EngineValkeyGo {
				units = w.Connections * w.Pipeline // a worker per pipeline slot
			}
			if len(pacers) != units {
				t.Fatalf("%d pacers for %d units", len(pacers), units)
			}
			want := uint64(4 * units)
			if got := res.Ops[lab.OpGet].Ops; got != want || res.Abandoned != 0 || len(res.Errors) != 0 {
				t.Errorf("%d GETs measured (abandoned %d, errors %v); want the pacers' %d", got, res.Abandoned, res.Errors, want)
			}
			if ph := res.Phases[lab.PhaseWarmup]; ph != nil {
				t.Errorf("requests completed in the warmup, before the pacer let any start: %+v", ph.Ops)
			}
			for wk, pc := range pacers {
				for i := 1; i < len(pc.asked); i++ {
					if pc.asked[i] < pc.asked[i-1] || pc.sents[i] < pc.sents[i-1] || pc.sents[i] > pc.sents[i-1]+1 {
						t.Fatalf("unit %d: asked at %v with sent %v: want elapsed and sent rising, sent by one", wk, pc.asked, pc.sents)
					}
				}
				if n := len(pc.sents); n == 0 || pc.sents[n-1] != 4 {
					t.Errorf("unit %d: last asked with sent %v, want 4", wk, pc.sents)
				}
			}
		})
	}
}

// The raw engine allocates nothing per request: a run's whole allocation
// count (setup of the stage, timers, goroutines) stays a small constant
// however many requests it makes, closed loop or paced, with one size or
// a mix, with or without the probe.
func TestRawEngineAllocatesNothingPerRequest(t *testing.T) {
	srv := labtest.StartRedis(t)
	mix, err := lab.ParseSizeMix("1KiB:1,4KiB:2,16KiB:1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mut  func(w *lab.Workload)
	}{
		{"SET", func(w *lab.Workload) { w.Ratio = lab.Ratio{Sets: 1} }},
		{"GET", func(w *lab.Workload) {}},
		{"paced GET+SET of a mix", func(w *lab.Workload) {
			w.Ratio, w.ValueSz, w.Rate = lab.Ratio{Gets: 3, Sets: 1}, mix, lab.Rate{PerSec: 6000}
		}},
		{"MGET of 4", func(w *lab.Workload) { w.Command, w.KeysPerOp = lab.CommandMGet, 4 }},
		{"MSET of 4", func(w *lab.Workload) { w.Command, w.KeysPerOp, w.Ratio = lab.CommandMSet, 4, lab.Ratio{} }},
		{"poisson ramp beside the probe", func(w *lab.Workload) {
			w.Ramp = lab.Ramp{From: lab.Rate{PerSec: 3000}, To: lab.Rate{PerSec: 6000}, Steps: 2, Step: lab.Duration(time.Second)}
			w.Arrival, w.Duration = lab.ArrivalPoisson, 0
			w.Probe = lab.Probe{Size: 100, Rate: lab.Rate{PerSec: 500}}
			w.Warmup = lab.Duration(2 * time.Second)
		}},
	} {
		w := lab.Workload{Host: "127.0.0.1", Port: srv.Port, Connections: 2, Pipeline: 2, Threads: 1, Keyspace: 16,
			ValueSz: lab.OneSize(4096), Ratio: lab.Ratio{Gets: 1}, Seed: 1,
			Duration: lab.Duration(400 * time.Millisecond)}
		tc.mut(&w)
		w.Prefill = w.Ratio.Gets > 0
		allocs, _, requests := allocsOfEnough(t, w, 1000)
		// A stage's own allocations (timers, goroutines, a spliced body's
		// pipes) are a constant that moves with scheduling: 24-67 seen,
		// 52 for 1007 SETs under qemu-user, past the requests/20 this
		// bound once was. One allocation per request, the design this
		// guards against, is 1000 or more.
		if allocs > 100+requests/100 {
			t.Errorf("%s: %d allocations for %d requests", tc.name, allocs, requests)
		}
		t.Logf("%s: %d allocations for %d requests", tc.name, allocs, requests)
	}
}

// allocsOfEnough is allocsOfRun over a window long enough for min
// requests: a run's fixed allocations (setup, timers, TLS handshakes)
// spread over its requests, and a busy machine moves fewer of them in a
// window (188 in 500 ms once, beside other packages' tests), so the
// window doubles until it holds min. A ramp's window is its steps.
func allocsOfEnough(t *testing.T, w lab.Workload, min uint64) (allocs, bytes, requests uint64) {
	t.Helper()
	for {
		if allocs, bytes, requests = allocsOfRun(t, w); requests >= min {
			return allocs, bytes, requests
		}
		if w.Duration == 0 || w.Duration.D() >= 8*time.Second {
			t.Fatalf("only %d requests in %s: too few to tell", requests, w.Duration)
		}
		w.Duration *= 2
	}
}

// allocsOfRun prefills when w asks, then counts the allocations of the
// run's measured stage (warmup, window, drain), their bytes, and its
// requests.
func allocsOfRun(t *testing.T, w lab.Workload) (allocs, bytes, requests uint64) {
	t.Helper()
	e := plannedEngine(t, w)
	defer e.shutdown()
	if w.Prefill {
		if err := e.prefill(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	e.measure(context.Background(), nil, nil)
	runtime.ReadMemStats(&after)
	requests = completed(e, phWarmup, phMeasure, phDrain)
	return after.Mallocs - before.Mallocs, after.TotalAlloc - before.TotalAlloc, requests
}

// completed is how many requests e's workers completed in the phases.
func completed(e *engine, phases ...int) uint64 {
	var n uint64
	for _, wk := range e.workers {
		for _, ph := range phases {
			for _, ops := range wk.phases[ph].ops {
				n += ops
			}
		}
	}
	return n
}
