package pace_test

import (
	"reflect"
	"testing"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/pace"
)

// step builds a step record: offered and achieved rates, and a p99 (0: no
// latency measured, nothing completed) with a p50 of half of it.
func step(i int, offered, achieved, p99 float64) lab.StepResult {
	return stepP50(i, offered, achieved, p99, p99/2)
}

// stepP50 is step with its own p50.
func stepP50(i int, offered, achieved, p99, p50 float64) lab.StepResult {
	s := lab.StepResult{Step: i, Offered: offered, Achieved: achieved}
	if p99 > 0 {
		s.Latency = &lab.StepLatency{Count: 100, P50: p50, P95: p99 * 0.9, P99: p99}
	}
	return s
}

// growing is s with its queue growing at slope.
func growing(s lab.StepResult, slope float64) lab.StepResult {
	s.LatenessSlope = slope
	return s
}

func TestKnee(t *testing.T) {
	// Issue 25: --ramp 1000:6000:6:1500ms, the first step's p99 noisy
	// (12.2 ms against 4 ms in the next two), step 3 at 1.83x the first
	// step's p99 and 6x its neighbours' p50 passed the old 2x-the-first-
	// step rule: the knee came a step late.
	noisy := []lab.StepResult{
		stepP50(0, 1000, 1000, 12200, 600), stepP50(1, 2000, 2000, 4000, 500), stepP50(2, 3000, 3000, 4100, 520),
		stepP50(3, 4000, 4000, 22326, 3000), stepP50(4, 5000, 4700, 90000, 40000), stepP50(5, 6000, 4700, 400000, 200000)}
	for _, tc := range []struct {
		name  string
		steps []lab.StepResult
		want  *lab.Knee
	}{
		{"no steps", nil, nil},
		{"kept up all along", []lab.StepResult{step(0, 100, 100, 500), step(1, 200, 199, 900), step(2, 300, 290, 1000)}, nil},
		{"p99 exactly twice the floor is not yet the knee", []lab.StepResult{step(0, 100, 100, 500), step(1, 200, 200, 1000)}, nil},
		{"achieved exactly 5 % short is not yet the knee", []lab.StepResult{step(0, 100, 100, 500), step(1, 200, 190, 500)}, nil},
		{"a slope of exactly 0.01 is not yet the knee", []lab.StepResult{step(0, 100, 100, 500), growing(step(1, 200, 200, 500), 0.01)}, nil},
		{"p99 leaves the floor", []lab.StepResult{step(0, 100, 100, 500), step(1, 200, 200, 700), step(2, 300, 300, 1001), step(3, 400, 300, 9000)},
			&lab.Knee{Step: 2, Offered: 300, FloorStep: 0, FloorP99: 500, FloorP50: 250, P99Ratio: 2.002, P50Ratio: 2.002, AchievedRatio: 1, Latency: true}},
		{"the noisy first step of issue 25: step 3 is the knee", noisy,
			&lab.Knee{Step: 3, Offered: 4000, FloorStep: 1, FloorP99: 4000, FloorP50: 500, P99Ratio: 5.5815, P50Ratio: 6, AchievedRatio: 1, Latency: true, Median: true}},
		{"p50 alone", []lab.StepResult{stepP50(0, 100, 100, 1000, 100), stepP50(1, 200, 200, 1000, 100), stepP50(2, 300, 300, 1500, 301)},
			&lab.Knee{Step: 2, Offered: 300, FloorStep: 0, FloorP99: 1000, FloorP50: 100, P99Ratio: 1.5, P50Ratio: 3.01, AchievedRatio: 1, Median: true}},
		// Issue 25: a step whose queue grows reports 100 % achieved (its
		// requests complete later): its lateness slope is the knee.
		{"the queue grows, achieved 100 %", []lab.StepResult{step(0, 100, 100, 500), step(1, 200, 200, 600), growing(step(2, 300, 300, 900), 0.2)},
			&lab.Knee{Step: 2, Offered: 300, FloorStep: 0, FloorP99: 500, FloorP50: 250, P99Ratio: 1.8, P50Ratio: 1.8, AchievedRatio: 1, LatenessSlope: 0.2, Queue: true}},
		{"achieved falls short first", []lab.StepResult{step(0, 100, 100, 500), step(1, 200, 189, 600), step(2, 300, 200, 5000)},
			&lab.Knee{Step: 1, Offered: 200, FloorStep: 0, FloorP99: 500, FloorP50: 250, P99Ratio: 1.2, P50Ratio: 1.2, AchievedRatio: 0.945, Rate: true}},
		{"several at once", []lab.StepResult{step(0, 100, 100, 500), growing(step(1, 200, 100, 5000), 0.5)},
			&lab.Knee{Step: 1, Offered: 200, FloorStep: 0, FloorP99: 500, FloorP50: 250, P99Ratio: 10, P50Ratio: 10, AchievedRatio: 0.5, LatenessSlope: 0.5, Latency: true, Median: true, Queue: true, Rate: true}},
		{"the first step already short", []lab.StepResult{step(0, 100, 50, 500), step(1, 200, 60, 5000)},
			&lab.Knee{Step: 0, Offered: 100, FloorStep: 0, FloorP99: 500, FloorP50: 250, P99Ratio: 1, P50Ratio: 1, AchievedRatio: 0.5, Rate: true}},
		{"nothing completed in a later step", []lab.StepResult{step(0, 100, 100, 500), step(1, 200, 0, 0)},
			&lab.Knee{Step: 1, Offered: 200, FloorStep: 0, FloorP99: 500, FloorP50: 250, AchievedRatio: 0, Rate: true}},
		{"no p99 in the first third: only the rate and queue halves apply", []lab.StepResult{step(0, 100, 100, 0), step(1, 200, 200, 0), step(2, 300, 300, 1e6), step(3, 400, 100, 1e6)},
			&lab.Knee{Step: 3, Offered: 400, FloorStep: -1, AchievedRatio: 0.25, Rate: true}},
		{"steps up to the floor are not judged by latency", []lab.StepResult{step(0, 100, 100, 9000), step(1, 200, 200, 400), step(2, 300, 300, 700)}, nil},
		{"a descending ramp", []lab.StepResult{step(0, 800, 700, 9000), step(1, 50, 50, 400)},
			&lab.Knee{Step: 0, Offered: 800, FloorStep: 1, FloorP99: 400, FloorP50: 200, P99Ratio: 22.5, P50Ratio: 22.5, AchievedRatio: 0.875, Rate: true}},
	} {
		got := pace.Knee(tc.steps)
		if got != nil {
			got.P99Ratio = round4(got.P99Ratio)
			got.P50Ratio = round4(got.P50Ratio)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, deref(got), deref(tc.want))
		}
	}
}

// The floor is the lowest p99 of the first third of the steps, at least
// the first two.
func TestFloor(t *testing.T) {
	p99s := func(ps ...float64) []lab.StepResult {
		out := make([]lab.StepResult, len(ps))
		for i, p := range ps {
			out[i] = step(i, float64(100*(i+1)), float64(100*(i+1)), p)
		}
		return out
	}
	for _, tc := range []struct {
		steps []lab.StepResult
		want  int
	}{
		{nil, -1},
		{p99s(5), 0},
		{p99s(5, 4), 1},
		{p99s(5, 4, 1), 1},             // 3 steps: the first two
		{p99s(5, 4, 3, 2, 1, 1, 1), 2}, // 7 steps: the first three
		{p99s(3, 3, 4, 1, 1, 1, 1), 0}, // the first of equals
		{p99s(0, 7, 8, 9, 9, 9), 1},    // no p99 in step 0
		{p99s(0, 0, 1, 1, 1, 1), -1},   // none in the first third
	} {
		if got := pace.Floor(tc.steps); got != tc.want {
			t.Errorf("floor of %d steps: %d, want %d", len(tc.steps), got, tc.want)
		}
	}
}

func round4(v float64) float64 { return float64(int64(v*1e4+0.5)) / 1e4 }

func deref(k *lab.Knee) any {
	if k == nil {
		return nil
	}
	return *k
}
