package pace_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/lab/pace"
)

const (
	ms = time.Millisecond
	us = time.Microsecond
)

func mustConstant(t testing.TB, rate float64, length time.Duration, a lab.Arrival, seed uint64) *pace.Schedule {
	t.Helper()
	s, err := pace.Constant(rate, length, a, seed)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustSteps(t testing.TB, rates []float64, step time.Duration, a lab.Arrival, seed uint64) *pace.Schedule {
	t.Helper()
	s, err := pace.Steps(rates, step, a, seed)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type paceCase struct {
	elapsed time.Duration
	sent    uint64
	wait    time.Duration
	stop    bool
}

func checkPace(t *testing.T, name string, p pace.Pacer, cases []paceCase) {
	t.Helper()
	for _, c := range cases {
		wait, stop := p.Pace(c.elapsed, c.sent)
		if wait != c.wait || stop != c.stop {
			t.Errorf("%s: Pace(%s, %d) = %s, %v; want %s, %v", name, c.elapsed, c.sent, wait, stop, c.wait, c.stop)
		}
	}
}

// The pacer is a pure function of (elapsed, sent): each row stands alone.
func TestConstantPace(t *testing.T) {
	checkPace(t, "1000/s for 1s", mustConstant(t, 1000, time.Second, lab.ArrivalConstant, 0), []paceCase{
		{0, 0, 0, false},  // the first request goes at once
		{0, 1, ms, false}, // the second at 1 ms
		{500 * us, 1, 500 * us, false},
		{ms, 1, 0, false},           // due exactly now
		{5 * ms, 2, 0, false},       // behind: send at once, no waiting to catch up on
		{2 * ms, 10, 8 * ms, false}, // ahead: wait for request 10's time
		{0, 999, 999 * ms, false},   // the last one
		{0, 1000, 0, true},          // at the end: stop
		{10 * time.Second, 1000, 0, true},
		{0, math.MaxUint64, 0, true},
	})
	checkPace(t, "3/s", mustConstant(t, 3, time.Minute, "", 0), []paceCase{
		{0, 1, 333333333, false}, // 1/3 s, rounded to the nanosecond
		{0, 2, 666666667, false},
		{0, 3, time.Second, false}, // from n, not by adding 1/3 three times
		{0, 179, 59666666667, false},
		{0, 180, 0, true},
	})
	checkPace(t, "0.5/s", mustConstant(t, 0.5, 10*time.Second, "", 0), []paceCase{
		{0, 4, 8 * time.Second, false},
		{0, 5, 0, true},
	})
}

// A ramp is steps at their own rates, back to back: request numbers run
// on across steps, and the schedule stops after the last.
func TestStepsPace(t *testing.T) {
	s := mustSteps(t, []float64{100, 200, 50}, time.Second, lab.ArrivalConstant, 0)
	checkPace(t, "100,200,50 per s", s, []paceCase{
		{0, 99, 990 * ms, false},
		{0, 100, time.Second, false}, // step 1 starts at 1 s
		{0, 101, 1005 * ms, false},
		{0, 299, 1995 * ms, false},
		{0, 300, 2 * time.Second, false}, // step 2
		{0, 349, 2980 * ms, false},
		{0, 350, 0, true},
		{0, 99, 990 * ms, false}, // back again: nothing remembered
	})
	for _, tc := range []struct {
		at   time.Duration
		step int
		ok   bool
	}{{-1, 0, false}, {0, 0, true}, {999 * ms, 0, true}, {time.Second, 1, true}, {2999 * ms, 2, true}, {3 * time.Second, 0, false}} {
		if i, ok := s.Step(tc.at); i != tc.step || ok != tc.ok {
			t.Errorf("Step(%s) = %d, %v; want %d, %v", tc.at, i, ok, tc.step, tc.ok)
		}
	}
	if s.Steps() != 3 || s.End() != 3*time.Second || s.Rate(1) != 200 || s.StepLength() != time.Second {
		t.Errorf("steps %d end %s rate(1) %v length %s", s.Steps(), s.End(), s.Rate(1), s.StepLength())
	}
	// Each step holds the requests its rate offers: 10 s at the ramp's rates.
	r, _ := lab.ParseRamp("50:800:8:10s")
	rates, _ := r.StepRates(0)
	ramp := mustSteps(t, rates, r.Step.D(), lab.ArrivalConstant, 0)
	perStep := make([]int, ramp.Steps())
	for n := uint64(0); ; n++ {
		at, ok := ramp.Intended(n)
		if !ok {
			break
		}
		i, _ := ramp.Step(at)
		perStep[i]++
	}
	for i, got := range perStep {
		if want := rates[i] * 10; math.Abs(float64(got)-want) > 1 {
			t.Errorf("step %d at %.1f/s holds %d requests, want %.0f", i, rates[i], got, want)
		}
	}
}

// send drives p as a sender would, in simulated time: it sends when told,
// each send taking cost(n), and waits when told, until the clock reaches
// until. It returns how many it sent by then.
func send(p pace.Pacer, until time.Duration, cost func(n uint64) time.Duration) uint64 {
	var now time.Duration
	var sent uint64
	for now < until {
		wait, stop := p.Pace(now, sent)
		if stop {
			break
		}
		if wait > 0 {
			now += wait
			continue
		}
		now += cost(sent)
		sent++
	}
	return sent
}

// drifting is the mistake the schedule avoids: a gap timed from the last
// send, so every late send pushes all later ones back.
type drifting struct {
	gap      time.Duration
	lastSent time.Duration
	n        uint64
}

func (d *drifting) Pace(elapsed time.Duration, sent uint64) (time.Duration, bool) {
	if sent != d.n {
		d.n, d.lastSent = sent, elapsed
	}
	if sent == 0 {
		return 0, false
	}
	return max(d.lastSent+d.gap-elapsed, 0), false
}

// Over 60 s at 1,000 requests/s a sender driven by the pacer sends within
// 0.5 % of 60,000 however its sends are delayed, as long as it can keep up
// on average: a late request is sent at once, the schedule does not move.
func TestConstantDoesNotDrift(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	costs := map[string]func(uint64) time.Duration{
		"free":         func(uint64) time.Duration { return 0 },
		"0.3 ms each":  func(uint64) time.Duration { return 300 * us },
		"0.95 ms each": func(uint64) time.Duration { return 950 * us },
		"a 200 ms stall/5s": func(n uint64) time.Duration {
			if n%5000 == 4999 {
				return 200 * ms
			}
			return 0
		},
		"random 0-1.8 ms": func(uint64) time.Duration { return time.Duration(rng.Int64N(int64(1800 * us))) },
	}
	const want = 60_000
	for name, cost := range costs {
		for _, a := range []lab.Arrival{lab.ArrivalConstant, lab.ArrivalPoisson} {
			p := mustConstant(t, 1000, 2*time.Minute, a, 7)
			got := send(p, time.Minute, cost)
			// Poisson arrivals vary by themselves: sqrt(60,000) is 245, 0.4 %.
			// Compare the sender with the schedule's own count instead.
			target := float64(want)
			if a == lab.ArrivalPoisson {
				target = float64(countBefore(t, p, time.Minute))
			}
			if math.Abs(float64(got)-target) > 0.005*want {
				t.Errorf("%s, %s: sent %d in 60 s, want %.0f within 0.5 %%", name, a, got, target)
			}
		}
		// The test can tell: a pacer timed from the last send falls behind.
		if got := send(&drifting{gap: ms}, time.Minute, cost); name != "free" && math.Abs(float64(got)-want) <= 0.005*want {
			t.Errorf("%s: the drifting pacer sent %d, and the test did not notice", name, got)
		}
	}
}

// countBefore is how many of s's requests are meant before t.
func countBefore(t *testing.T, s *pace.Schedule, until time.Duration) uint64 {
	t.Helper()
	var n uint64
	for ; ; n++ {
		if at, ok := s.Intended(n); !ok || at >= until {
			return n
		}
	}
}

func TestPoissonArrivals(t *testing.T) {
	const rate, secs = 1000.0, 100
	for _, seed := range []uint64{1, 2, 3, 4, 5} {
		s := mustConstant(t, rate, secs*time.Second, lab.ArrivalPoisson, seed)
		// The count in 100 s is poisson with mean 100,000: within 4 sigma.
		n := countBefore(t, s, secs*time.Second)
		if mean := rate * secs; math.Abs(float64(n)-mean) > 4*math.Sqrt(mean) {
			t.Errorf("seed %d: %d arrivals in %d s, want %.0f ± %.0f", seed, n, secs, mean, 4*math.Sqrt(mean))
		}
		// The gaps are exponential with mean 1/rate: equal-probability
		// bins by the exponential's quantiles, chi-square at p = 0.01.
		const bins = 20
		exp := distuv.Exponential{Rate: rate}
		counts := make([]int, bins)
		prob := make([]float64, bins)
		var prev time.Duration
		for i := uint64(0); i < n; i++ {
			at, _ := s.Intended(i)
			gap := (at - prev).Seconds()
			prev = at
			b := min(int(exp.CDF(gap)*bins), bins-1)
			counts[b]++
		}
		for i := range prob {
			prob[i] = 1.0 / bins
		}
		if stat, bound := labtest.ChiSquare(counts, prob); !(stat <= bound) {
			t.Errorf("seed %d: gap counts %v, chi-square %.1f above %.1f", seed, counts, stat, bound)
		}
	}
	// Another seed, other arrivals; the same seed, the same ones.
	a, b, c := mustConstant(t, rate, time.Minute, lab.ArrivalPoisson, 1), mustConstant(t, rate, time.Minute, lab.ArrivalPoisson, 2), mustConstant(t, rate, time.Minute, lab.ArrivalPoisson, 1)
	at1, _ := a.Intended(100)
	at2, _ := b.Intended(100)
	at3, _ := c.Intended(100)
	if at1 == at2 || at1 != at3 {
		t.Errorf("request 100: %s (seed 1), %s (seed 2), %s (seed 1 again)", at1, at2, at3)
	}
}

// Request n's time is a function of (seed, n): asked in any order, asked
// twice, or from a fresh schedule, the answer is the same.
func TestPoissonIsPureInN(t *testing.T) {
	fresh := func() *pace.Schedule {
		return mustSteps(t, []float64{500, 2000}, time.Second, lab.ArrivalPoisson, 9)
	}
	s := fresh()
	want := make([]time.Duration, 1500)
	for n := range want {
		at, ok := fresh().Intended(uint64(n))
		if !ok {
			t.Fatalf("request %d past the end", n)
		}
		want[n] = at
	}
	order := rand.New(rand.NewPCG(3, 4)).Perm(len(want))
	for _, n := range order {
		if at, _ := s.Intended(uint64(n)); at != want[n] {
			t.Fatalf("request %d: %s asked out of order, %s from fresh", n, at, want[n])
		}
	}
	for n := 1; n < len(want); n++ {
		if want[n] < want[n-1] {
			t.Fatalf("request %d at %s before request %d at %s", n, want[n], n-1, want[n-1])
		}
	}
	// About 2,500 requests in 2 s: the schedule stops by itself, even when
	// asked for a request far past its end.
	if _, stop := s.Pace(0, 1<<40); !stop {
		t.Error("request 2^40 of a 2 s schedule is not past its end")
	}
}

// k shares of a schedule together send what it offers.
func TestShare(t *testing.T) {
	whole := mustSteps(t, []float64{1000, 3000}, time.Second, lab.ArrivalConstant, 0)
	const k = 3
	var union []time.Duration
	for i := range k {
		sh, err := whole.Share(i, k)
		if err != nil {
			t.Fatal(err)
		}
		for n := uint64(0); ; n++ {
			at, ok := sh.Intended(n)
			if !ok {
				break
			}
			union = append(union, at)
		}
	}
	total := countBefore(t, whole, whole.End())
	if uint64(len(union)) != total || total != 4000 {
		t.Fatalf("the shares send %d, the whole %d, want 4000", len(union), total)
	}
	seen := map[time.Duration]int{}
	for _, at := range union {
		seen[at]++
	}
	for n := uint64(0); n < total; n++ {
		at, _ := whole.Intended(n)
		if seen[at] == 0 {
			t.Fatalf("request %d at %s is in no share", n, at)
		}
		seen[at]--
	}
	// Poisson shares are independent streams at 1/k of the rate: their
	// union offers the whole rate (60 s at 1,000/s: within 4 sigma).
	pw := mustConstant(t, 1000, time.Minute, lab.ArrivalPoisson, 11)
	var n uint64
	for i := range 4 {
		sh, _ := pw.Share(i, 4)
		n += countBefore(t, sh, time.Minute)
	}
	if math.Abs(float64(n)-60_000) > 4*math.Sqrt(60_000) {
		t.Errorf("4 poisson shares send %d in 60 s at 1,000/s", n)
	}
	a, _ := pw.Share(0, 4)
	b, _ := pw.Share(1, 4)
	atA, _ := a.Intended(10)
	atB, _ := b.Intended(10)
	if atA == atB {
		t.Errorf("shares 0 and 1 draw the same gaps: request 10 at %s in both", atA)
	}
	for _, bad := range [][2]int{{0, 0}, {-1, 2}, {2, 2}} {
		if _, err := whole.Share(bad[0], bad[1]); err == nil {
			t.Errorf("Share(%d, %d) accepted", bad[0], bad[1])
		}
	}
}

// Pace and Intended run per request: no allocation, for every kind.
func TestPaceDoesNotAllocate(t *testing.T) {
	for name, p := range map[string]*pace.Schedule{
		"constant": mustConstant(t, 1e6, time.Hour, lab.ArrivalConstant, 1),
		"poisson":  mustConstant(t, 1e6, time.Hour, lab.ArrivalPoisson, 1),
		"ramp":     mustSteps(t, []float64{1e5, 2e5, 3e5, 4e5}, time.Minute, lab.ArrivalPoisson, 1),
	} {
		var pacer pace.Pacer = p
		var sent uint64
		elapsed := time.Duration(0)
		if n := testing.AllocsPerRun(10_000, func() {
			wait, _ := pacer.Pace(elapsed, sent)
			at, _ := p.Intended(sent)
			_, _ = p.Step(at)
			elapsed += wait
			sent++
		}); n != 0 {
			t.Errorf("%s: %v allocations per request", name, n)
		}
	}
}

func TestScheduleBounds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		build   func() (*pace.Schedule, error)
		wantErr string
	}{
		{"rate 0", func() (*pace.Schedule, error) { return pace.Constant(0, time.Second, "", 0) }, "use 0.01 to 10000000"},
		{"rate NaN", func() (*pace.Schedule, error) { return pace.Constant(math.NaN(), time.Second, "", 0) }, "NaN requests/s"},
		{"rate Inf", func() (*pace.Schedule, error) { return pace.Constant(math.Inf(1), time.Second, "", 0) }, "+Inf requests/s"},
		{"rate too high", func() (*pace.Schedule, error) { return pace.Constant(1e8, time.Second, "", 0) }, "use 0.01 to 10000000"},
		{"length 0", func() (*pace.Schedule, error) { return pace.Constant(1, 0, "", 0) }, "schedule length 0s"},
		{"length 49h", func() (*pace.Schedule, error) { return pace.Constant(1, 49*time.Hour, "", 0) }, "at most 48h"},
		{"arrival", func() (*pace.Schedule, error) { return pace.Constant(1, time.Second, "bursty", 0) }, `arrival "bursty"`},
		{"no steps", func() (*pace.Schedule, error) { return pace.Steps(nil, time.Second, "", 0) }, "0 steps"},
		{"step 0", func() (*pace.Schedule, error) { return pace.Steps([]float64{1}, 0, "", 0) }, "steps of more than 0"},
		{"one bad step", func() (*pace.Schedule, error) { return pace.Steps([]float64{1, -1}, time.Second, "", 0) }, "step 1: -1 requests/s"},
		{"too long", func() (*pace.Schedule, error) { return pace.Steps([]float64{1, 1, 1}, 17*time.Hour, "", 0) }, "at most 48h"},
	} {
		if s, err := tc.build(); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: %v, %v; want an error with %q", tc.name, s, err, tc.wantErr)
		}
	}
	// The steps given are copied: changing the caller's slice later
	// changes nothing.
	rates := []float64{10, 20}
	s := mustSteps(t, rates, time.Second, "", 0)
	rates[0] = 1000
	if at, _ := s.Intended(1); at != 100*ms {
		t.Errorf("request 1 at %s after the caller's slice changed", at)
	}
}

// The lab units build the schedule they describe: a bit rate becomes
// requests with the mix's mean size, a ramp its steps.
func TestFromLabUnits(t *testing.T) {
	mix, _ := lab.ParseSizeMix("1MiB:1,3MiB:1") // mean 2 MiB
	rate, _ := lab.ParseRate("16Gbps")
	s, err := pace.FromRate(rate, mix.Mean(), time.Second, lab.ArrivalConstant, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := 16e9 / 8 / (2 << 20); s.Rate(0) != want || s.End() != time.Second {
		t.Errorf("16Gbps of 2 MiB values: %v requests/s for %s, want %v for 1s", s.Rate(0), s.End(), want)
	}
	ramp, _ := lab.ParseRamp("1Gbps:4Gbps:4:2s")
	r, err := pace.FromRamp(ramp, 1e6, lab.ArrivalPoisson, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{125, 250, 375, 500} {
		if r.Rate(i) != want {
			t.Errorf("step %d: %v requests/s, want %v", i, r.Rate(i), want)
		}
	}
	if r.Steps() != 4 || r.End() != 8*time.Second {
		t.Errorf("%d steps, end %s", r.Steps(), r.End())
	}
	slow, _ := lab.ParseRate("1kbps")
	if _, err := pace.FromRate(slow, float64(64<<20), time.Second, "", 0); err == nil || !strings.Contains(err.Error(), "1kbps with values of 64MiB on average") {
		t.Errorf("1kbps of 64 MiB values: %v", err)
	}
	if wait, stop := (pace.ClosedLoop{}).Pace(time.Hour, math.MaxUint64); wait != 0 || stop {
		t.Errorf("closed loop: %s, %v", wait, stop)
	}
}
