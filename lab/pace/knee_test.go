package pace_test

import (
	"reflect"
	"testing"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/pace"
)

// step builds a step record: offered and achieved rates, and a p99 (0: no
// latency measured, nothing completed).
func step(i int, offered, achieved, p99 float64) lab.StepResult {
	s := lab.StepResult{Step: i, Offered: offered, Achieved: achieved}
	if p99 > 0 {
		s.Latency = &lab.StepLatency{Count: 100, P50: p99 / 2, P95: p99 * 0.9, P99: p99}
	}
	return s
}

func TestKnee(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []lab.StepResult
		want  *lab.Knee
	}{
		{"no steps", nil, nil},
		{"kept up all along", []lab.StepResult{step(0, 100, 100, 500), step(1, 200, 199, 900), step(2, 300, 290, 1000)}, nil},
		{"p99 exactly twice is not yet the knee", []lab.StepResult{step(0, 100, 100, 500), step(1, 200, 200, 1000)}, nil},
		{"achieved exactly 5 % short is not yet the knee", []lab.StepResult{step(0, 100, 100, 500), step(1, 200, 190, 500)}, nil},
		{"p99 leaves the floor", []lab.StepResult{step(0, 100, 100, 500), step(1, 200, 200, 700), step(2, 300, 300, 1001), step(3, 400, 300, 9000)},
			&lab.Knee{Step: 2, Offered: 300, P99Ratio: 2.002, AchievedRatio: 1, Latency: true}},
		{"achieved falls short first", []lab.StepResult{step(0, 100, 100, 500), step(1, 200, 189, 600), step(2, 300, 200, 5000)},
			&lab.Knee{Step: 1, Offered: 200, P99Ratio: 1.2, AchievedRatio: 0.945, Rate: true}},
		{"both at once", []lab.StepResult{step(0, 100, 100, 500), step(1, 200, 100, 5000)},
			&lab.Knee{Step: 1, Offered: 200, P99Ratio: 10, AchievedRatio: 0.5, Latency: true, Rate: true}},
		{"the first step already short", []lab.StepResult{step(0, 100, 50, 500), step(1, 200, 60, 5000)},
			&lab.Knee{Step: 0, Offered: 100, P99Ratio: 1, AchievedRatio: 0.5, Rate: true}},
		{"nothing completed in a later step", []lab.StepResult{step(0, 100, 100, 500), step(1, 200, 0, 0)},
			&lab.Knee{Step: 1, Offered: 200, AchievedRatio: 0, Rate: true}},
		{"no first p99: only the rate half applies", []lab.StepResult{step(0, 100, 100, 0), step(1, 200, 200, 1e6), step(2, 300, 100, 1e6)},
			&lab.Knee{Step: 2, Offered: 300, AchievedRatio: 1.0 / 3, Rate: true}},
		{"a descending ramp", []lab.StepResult{step(0, 800, 700, 9000), step(1, 50, 50, 400)},
			&lab.Knee{Step: 0, Offered: 800, P99Ratio: 1, AchievedRatio: 0.875, Rate: true}},
	} {
		if got := pace.Knee(tc.steps); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, deref(got), deref(tc.want))
		}
	}
}

func deref(k *lab.Knee) any {
	if k == nil {
		return nil
	}
	return *k
}
