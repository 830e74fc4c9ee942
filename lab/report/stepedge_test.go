package report

import (
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
)

// The summary's step table is followed by the ramp's edge-biased steps
// (lab.StepsEdgeNote) when there are any, and by nothing when none is.
func TestSummaryStepEdgeBias(t *testing.T) {
	step := lab.Duration(1500 * time.Millisecond)
	r := &lab.Result{Workload: lab.Workload{ValueSz: lab.OneSize(1 << 20)}.Resolve(),
		Ops: map[lab.Op]*lab.OpResult{lab.OpGet: {Ops: 100, Latency: lab.LatencySummary{Count: 100, P50: 900, P99: 3200}}},
		Steps: []lab.StepResult{
			{Step: 0, Length: step, Offered: 1000, Achieved: 1000, Latency: &lab.StepLatency{Count: 1500, P99: 4000}},
			{Step: 1, Start: step, Length: step, Offered: 2000, Achieved: 1900, Latency: &lab.StepLatency{Count: 2850, P99: 180_000}},
		}}
	var b strings.Builder
	WriteSummary(&b, r, nil)
	want := "edge bias step 1: p99 more than 10% of the 1.5s step (up to 180ms)"
	if !strings.Contains(b.String(), want) || !strings.Contains(b.String(), "steps of 2s or longer") {
		t.Errorf("the summary lacks %q and the step length that fixes it:\n%s", want, b.String())
	}
	r.Steps[1].Latency.P99 = 9000
	b.Reset()
	WriteSummary(&b, r, nil)
	if strings.Contains(b.String(), "edge bias") {
		t.Errorf("a ramp whose steps held their p99 to a tenth reports an edge bias:\n%s", b.String())
	}
}
