package lab

import (
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
