package lab

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A window whose requests last more than a tenth of it counts requests
// begun in the warmup whole (and leaves those running at its end out):
// the record says which op, by which latency, and the window that would
// hold its longest request to a tenth. make demo's 64 MiB cells (4 s
// windows, max 1-2 s) are the case the issue found.
func TestEdgeBias(t *testing.T) {
	const s = 1e6 // µs
	for _, tc := range []struct {
		name     string
		window   time.Duration
		p99, max float64 // µs
		want     *EdgeBias
	}{
		{"64 MiB in 4 s: p99 past a tenth", 4 * time.Second, 1.1 * s, 1.9 * s,
			&EdgeBias{Op: OpGet, By: "p99", LatencyUs: 1.1 * s, Window: Duration(4 * time.Second), Needs: Duration(19 * time.Second)}},
		{"only the max past a tenth", 4 * time.Second, 0.2 * s, 0.5 * s,
			&EdgeBias{Op: OpGet, By: "max", LatencyUs: 0.5 * s, Window: Duration(4 * time.Second), Needs: Duration(5 * time.Second)}},
		{"a tenth exactly is fine", 4 * time.Second, 0.1 * s, 0.4 * s, nil},
		{"1 MiB in 4 s", 4 * time.Second, 0.008 * s, 0.035 * s, nil},
		{"no window", 0, 0.5 * s, 1 * s, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Result{Window: Window{Measured: Duration(tc.window)}, Ops: map[Op]*OpResult{
				OpGet: {Ops: 10, Latency: LatencySummary{Count: 10, P99: tc.p99, Max: tc.max}},
				OpSet: {}, // nothing completed: no latency to judge
			}}
			r.MarkEdgeBias()
			switch {
			case tc.want == nil && (r.EdgeBias != nil || len(r.Notes) > 0):
				t.Errorf("no bias expected, got %+v, notes %q", r.EdgeBias, r.Notes)
			case tc.want != nil && (len(r.EdgeBias) != 1 || r.EdgeBias[0] != *tc.want):
				t.Errorf("edge bias %+v, want [%+v]", r.EdgeBias, *tc.want)
			case tc.want != nil:
				if len(r.Notes) != 1 {
					t.Fatalf("notes %q, want one", r.Notes)
				}
				for _, w := range []string{"GET", tc.want.By, "ops/s and Gbps", "-d " + tc.want.Needs.String()} {
					if !strings.Contains(r.Notes[0], w) {
						t.Errorf("note %q lacks %q", r.Notes[0], w)
					}
				}
			}
		})
	}
}

// A ramp step is judged as a window is, on its own length: a step whose
// p99 passes a tenth of it ran on into the next step. Each table is a
// ramp's steps (p99 in ms, 0 for a step where nothing completed); want
// the steps judged biased and the step length the summary asks for.
func TestStepEdgeBias(t *testing.T) {
	for _, tc := range []struct {
		name   string
		length time.Duration
		p99ms  []float64
		biased []int
		needs  time.Duration
	}{
		{"a ramp that kept up", 1500 * time.Millisecond, []float64{4, 12.2, 4, 7}, nil, 0},
		{"the queue grows past the knee", 1500 * time.Millisecond, []float64{4, 4, 7.3, 180, 950}, []int{3, 4}, 10 * time.Second},
		{"a tenth exactly is fine", 2 * time.Second, []float64{200, 200.001}, []int{1}, 3 * time.Second},
		{"nothing completed in a step", 2 * time.Second, []float64{5, 0, 400}, []int{2}, 4 * time.Second},
		{"64 MiB GETs in 1 s steps", time.Second, []float64{420, 450, 610}, []int{0, 1, 2}, 7 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steps := make([]StepResult, len(tc.p99ms))
			for i, p := range tc.p99ms {
				steps[i] = StepResult{Step: i, Start: Duration(time.Duration(i) * tc.length), Length: Duration(tc.length)}
				if p > 0 {
					steps[i].Latency = &StepLatency{Count: 100, P50: p / 2, P95: p * 0.9, P99: p * 1e3}
				}
			}
			var got []int
			for _, s := range steps {
				e := StepEdgeBiasOf(s)
				if e == nil {
					continue
				}
				got = append(got, s.Step)
				if e.P99Us != s.Latency.P99 || e.Needs.D() < time.Duration(s.Latency.P99*1e3/EdgeFraction) || e.Needs.D()%time.Second != 0 {
					t.Errorf("step %d: %+v: p99 %v µs, needs a whole-second step holding it to a tenth", s.Step, e, s.Latency.P99)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.biased) {
				t.Errorf("biased steps %v, want %v", got, tc.biased)
			}
			note := StepsEdgeNote(steps)
			if tc.biased == nil {
				if note != "" {
					t.Errorf("note %q, want none", note)
				}
				return
			}
			for _, w := range []string{fmt.Sprintf("%d:", tc.biased[len(tc.biased)-1]), "of the " + tc.length.String() + " step",
				"steps of " + tc.needs.String() + " or longer", "--ramp FROM:TO:STEPS:" + tc.needs.String()} {
				if !strings.Contains(note, w) {
					t.Errorf("note %q lacks %q", note, w)
				}
			}
		})
	}
}
