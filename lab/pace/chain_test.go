package pace_test

import (
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/pace"
)

func mustChain(t testing.TB, start time.Duration, parts ...*pace.Schedule) *pace.Chain {
	t.Helper()
	c, err := pace.NewChain(start, parts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A chain is schedules back to back from its start: a warmup at one rate,
// then a ramp. Request numbers run on across the parts, and it is still a
// pure function of (elapsed, sent).
func TestChainPace(t *testing.T) {
	warm := mustConstant(t, 100, time.Second, lab.ArrivalConstant, 0)
	ramp := mustSteps(t, []float64{200, 400}, time.Second, lab.ArrivalConstant, 0)
	c := mustChain(t, 500*ms, warm, ramp)
	checkPace(t, "from 0.5 s: 100/s for 1 s, then 200/s, 400/s", c, []paceCase{
		{0, 0, 500 * ms, false}, // nothing before the start
		{500 * ms, 0, 0, false},
		{0, 99, 1490 * ms, false},
		{0, 100, 1500 * ms, false}, // the ramp's first request, at its start
		{0, 101, 1505 * ms, false},
		{0, 300, 2500 * ms, false}, // its second step
		{0, 699, 3497500 * us, false},
		{0, 700, 0, true},
		{4 * time.Second, 700, 0, true},
		{0, 50, 1 * time.Second, false}, // back into the first part
		{2 * time.Second, 120, 0, false},
	})
	if c.End() != 3500*ms {
		t.Errorf("end %s, want 3.5s", c.End())
	}
	// One part is that part, moved to the start.
	one := mustChain(t, 2*time.Second, mustConstant(t, 10, time.Second, "", 0))
	checkPace(t, "10/s from 2 s", one, []paceCase{{0, 0, 2 * time.Second, false}, {0, 9, 2900 * ms, false}, {0, 10, 0, true}})
	if _, err := pace.NewChain(0); err == nil {
		t.Error("a chain of nothing was made")
	}
	if _, err := pace.NewChain(-time.Second, warm); err == nil {
		t.Error("a chain starting before the load was made")
	}
}

// Shares of a chain send together exactly what the chain offers: the
// same intended times, each once.
func TestChainShares(t *testing.T) {
	for _, a := range []lab.Arrival{lab.ArrivalConstant, lab.ArrivalPoisson} {
		whole := mustChain(t, time.Second, mustConstant(t, 300, 2*time.Second, a, 3), mustSteps(t, []float64{500, 100}, time.Second, a, 3))
		const k = 3
		var n [k]uint64
		perPart := map[bool]int{}
		for i := 0; i < k; i++ {
			sh, err := whole.Share(i, k)
			if err != nil {
				t.Fatal(err)
			}
			var last time.Duration
			for ; ; n[i]++ {
				at, ok := sh.Intended(n[i])
				if !ok {
					break
				}
				if at < last || at < time.Second || at >= whole.End() {
					t.Fatalf("%s share %d: request %d at %s after %s", a, i, n[i], at, last)
				}
				last = at
				perPart[at >= 3*time.Second]++
			}
		}
		total := n[0] + n[1] + n[2]
		// 600 in the warm part, 600 in the ramp; poisson varies by a few sqrt.
		if a == lab.ArrivalConstant && (total != 1200 || perPart[false] != 600) {
			t.Errorf("constant shares send %d (%d in the first part), want 1200 (600)", total, perPart[false])
		}
		if a == lab.ArrivalPoisson && (total < 1080 || total > 1320) {
			t.Errorf("poisson shares send %d, want about 1200", total)
		}
	}
}

// Asked in order, as the engine asks, a chain costs no allocation.
func TestChainDoesNotAllocate(t *testing.T) {
	c := mustChain(t, 0, mustConstant(t, 1000, time.Second, lab.ArrivalPoisson, 1), mustSteps(t, []float64{10, 20}, time.Second, lab.ArrivalPoisson, 1))
	var n uint64
	if a := testing.AllocsPerRun(2000, func() { c.Pace(time.Duration(n)*ms, n); n++ }); a != 0 {
		t.Errorf("%.1f allocations per request", a)
	}
}

// After is closed loop from a moment on: the main load beside a probe
// that first runs alone.
func TestAfterPace(t *testing.T) {
	checkPace(t, "closed loop from 2 s", pace.After(2*time.Second), []paceCase{
		{0, 0, 2 * time.Second, false},
		{1500 * ms, 0, 500 * ms, false},
		{2 * time.Second, 0, 0, false},
		{time.Hour, 1 << 40, 0, false}, // never stops: the run's end does
	})
}
