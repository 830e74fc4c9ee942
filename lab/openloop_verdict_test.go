package lab_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
)

// The verdict is a function of the figures: each of its three conditions
// fails it alone, and Why names each failed one with its figures.
func TestJudgeOpenLoop(t *testing.T) {
	for _, tc := range []struct {
		name  string
		o     lab.OpenLoopResult
		ok    bool
		short bool
		grew  bool
		why   []string // substrings, one per reason, in order
	}{
		{"kept up", lab.OpenLoopResult{Offered: 1000, Achieved: 999, LatenessSlope: 0.0001}, true, false, false, nil},
		{"exactly 95 % and a 1 % slope still sustain", lab.OpenLoopResult{Offered: 1000, Achieved: 950, LatenessSlope: 0.01}, true, false, false, nil},
		// Issue 25: --rate 7000 with a 10 s queue limit achieved 4984/s,
		// dropped nothing, and was called sustained.
		{"71 % achieved, nothing dropped", lab.OpenLoopResult{Offered: 7000, Achieved: 4984, LatenessSlope: 0.29, Unsent: 15000},
			false, true, true, []string{"achieved 4984 requests/s, 71.2 % of the 7000 offered", "the queue grew: lateness rose 0.29 s per second", "15000 requests still owed"}},
		{"96 % achieved but the queue grows", lab.OpenLoopResult{Offered: 1000, Achieved: 960, LatenessSlope: 0.03},
			false, false, true, []string{"lateness rose 0.03 s"}},
		{"errors keep achieved down on time", lab.OpenLoopResult{Offered: 1000, Achieved: 500},
			false, true, false, []string{"50.0 % of the 1000 offered"}},
		{"one dropped", lab.OpenLoopResult{Offered: 1000, Achieved: 1000, Dropped: 1, QueueLimit: lab.Duration(time.Second)},
			false, false, false, []string{"1 requests dropped: they would have waited more than --queue-limit 1s"}},
	} {
		o := tc.o
		lab.JudgeOpenLoop(&o)
		if o.Sustainable != tc.ok || o.ShortOfOffered != tc.short || o.QueueGrew != tc.grew {
			t.Errorf("%s: sustainable %v short %v grew %v, want %v %v %v", tc.name, o.Sustainable, o.ShortOfOffered, o.QueueGrew, tc.ok, tc.short, tc.grew)
		}
		why := strings.Join(o.Why(), "; ")
		if tc.ok != (why == "") {
			t.Errorf("%s: why %q for sustainable %v", tc.name, why, o.Sustainable)
		}
		for _, w := range tc.why {
			if !strings.Contains(why, w) {
				t.Errorf("%s: why %q lacks %q", tc.name, why, w)
			}
		}
	}
}

// The slope of lateness over the window: flat for a queue that holds,
// the server's shortfall for one that grows, whatever the bins' counts.
func TestLatenessSlope(t *testing.T) {
	span := 10 * time.Second
	bins := func(f func(mid float64) (n uint64, late float64)) []lab.LatenessBin {
		out := make([]lab.LatenessBin, lab.LatenessBins)
		for i := range out {
			n, late := f((float64(i) + 0.5) * span.Seconds() / lab.LatenessBins)
			out[i] = lab.LatenessBin{N: n, Sum: float64(n) * late * 1e9}
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		bins  []lab.LatenessBin
		slope float64
		ok    bool
	}{
		{"none", nil, 0, false},
		{"one bin", []lab.LatenessBin{{N: 5, Sum: 1e9}}, 0, false},
		{"steady 2 ms", bins(func(float64) (uint64, float64) { return 100, 0.002 }), 0, true},
		// A server at 70 % of the offered rate: request at t waits 0.3 t.
		{"a server at 70 %", bins(func(m float64) (uint64, float64) { return 700, 0.5 + 0.3*m }), 0.3, true},
		{"counts differ, the line holds", bins(func(m float64) (uint64, float64) { return uint64(1 + 50*m), 0.05 * m }), 0.05, true},
		{"empty bins left out", []lab.LatenessBin{{N: 10, Sum: 10 * 0.5e9}, {}, {}, {}, {}, {}, {}, {}, {}, {N: 10, Sum: 10 * 9.5e9}}, 1, true},
	} {
		slope, ok := lab.LatenessSlope(tc.bins, span)
		if ok != tc.ok || math.Abs(slope-tc.slope) > 1e-9 {
			t.Errorf("%s: slope %v %v, want %v %v", tc.name, slope, ok, tc.slope, tc.ok)
		}
	}
}
