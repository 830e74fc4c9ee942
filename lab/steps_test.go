package lab_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
)

// A step stores its durations as strings and seconds, like every v2
// duration, and leaves out the latencies it did not measure.
func TestStepResultJSON(t *testing.T) {
	s := lab.StepResult{Step: 2, Start: lab.Duration(20 * time.Second), Length: lab.Duration(10 * time.Second),
		Offered: 300, Achieved: 299.5, Gbps: 2.5, Sent: 3000, Ops: 2995, Errors: 5, Late: 12,
		Latency: &lab.StepLatency{Count: 2995, P50: 800, P95: 1500, P99: 2100}}
	b, err := json.Marshal(s)
	want := `{"step":2,"start":"20s","duration":"10s","offered_ops_per_sec":300,"achieved_ops_per_sec":299.5,"gbps":2.5,` +
		`"sent":3000,"ops":2995,"errors":5,"late":12,"dropped":0,"unsent":0,"lateness_slope":0,"latency_us":{"count":2995,"p50":800,"p95":1500,"p99":2100},"start_s":20,"duration_s":10}`
	if err != nil || string(b) != want {
		t.Errorf("marshals to\n%s, %v; want\n%s", b, err, want)
	}
	var back lab.StepResult
	if err := json.Unmarshal(b, &back); err != nil || back.Start != s.Start || back.Latency == nil || *back.Latency != *s.Latency || back.Service != nil {
		t.Errorf("reads back as %+v, %v", back, err)
	}
	// A step whose p99 passed a tenth of it says so, with the step length
	// that would hold it (lab.StepEdgeBiasOf).
	s.Latency.P99 = 1_200_000
	b, _ = json.Marshal(s)
	if want := `"edge_bias":{"p99_us":1200000,"needs":"12s"}`; !strings.Contains(string(b), want) {
		t.Errorf("a step with p99 1.2 s of 10 s marshals to\n%s\nwithout %s", b, want)
	}
	k, _ := json.Marshal(lab.Knee{Step: 3, Offered: 500, FloorStep: 1, FloorP99: 400, FloorP50: 100, P99Ratio: 2.5, P50Ratio: 1.5, AchievedRatio: 0.99, Latency: true})
	if want := `{"step":3,"offered_ops_per_sec":500,"floor_step":1,"floor_p99_us":400,"floor_p50_us":100,"p99_ratio":2.5,"p50_ratio":1.5,` +
		`"achieved_ratio":0.99,"lateness_slope":0,"latency":true,"p50":false,"queue":false,"rate":false}`; string(k) != want {
		t.Errorf("a knee marshals to %s, want %s", k, want)
	}
}
