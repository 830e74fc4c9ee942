package plots

import (
	"bytes"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/pace"
	"github.com/linerate/linerate/plots/internal/fixture"
	"github.com/linerate/linerate/sweeps"
)

// openRun writes one of the open-loop fixtures into a test directory.
func openRun(t *testing.T, write func(string) error) *Campaign {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	if err := write(dir); err != nil {
		t.Fatal(err)
	}
	return load(t, dir)
}

// The open-loop charts and tables, as data: latency vs offered load per
// version with the knee, the probe's p99 vs the main load's size, and a
// mix's figures per size class.
func TestOpenLoopGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(string) error
	}{
		{"openloop", fixture.WriteOpenLoop},
		{"ramp", fixture.WriteRamp},
	} {
		c := openRun(t, tc.write)
		var b strings.Builder
		for _, ch := range Charts(c) {
			if ch.Kind == "cpu" {
				continue
			}
			b.WriteString(Describe(ch))
			b.WriteString("\n")
			for _, f := range []string{FormatPNG, FormatSVG} {
				if _, err := Draw(ch, f); err != nil {
					t.Errorf("%s: draw %s: %v", ch.Name, f, err)
				}
			}
		}
		golden(t, "charts-"+tc.name+".txt", b.String())
		var md bytes.Buffer
		if err := WriteMarkdown(&md, Tables(c)); err != nil {
			t.Fatal(err)
		}
		golden(t, "tables-"+tc.name+".md", md.String())
	}
}

// A ramp gives one load chart whose lines are the versions' steps and
// whose marks are their knees, where the model's capacity is passed.
func TestLoadChartMarksTheKnee(t *testing.T) {
	c := openRun(t, fixture.WriteRamp)
	var load *Chart
	for _, ch := range Charts(c) {
		if ch.Kind == "load" {
			if load != nil {
				t.Fatalf("two load charts: %s and %s", load.Name, ch.Name)
			}
			load = ch
		}
	}
	if load == nil || len(load.Lines) != 3 || len(load.Marks) != 3 {
		t.Fatalf("load chart %+v", load)
	}
	// The ramp is 2-32 Gbit/s in steps of 6; capacities 11, 18 and 15:
	// the first step past each is its knee (by the achieved rate).
	want := map[string]float64{"valkey-8.1.8": 14, "valkey-9.1.0": 20, "redis-8.0.6": 20}
	for _, m := range load.Marks {
		v := strings.Fields(m.What)[0]
		if m.Kind != MarkKnee || math.Abs(m.X-want[v]) > 0.01 {
			t.Errorf("%s: knee %s at %v, want %v Gbps", v, m.Kind, m.X, want[v])
		}
	}
	if !strings.Contains(load.XLabel, "Gbps") || len(load.Lines[0].Points) != 6 {
		t.Errorf("x %q, %d points", load.XLabel, len(load.Lines[0].Points))
	}
}

// Listed rates are a load axis: each version's cells of one size become a
// line over the rates; the probe's p99 is charted against the main load's
// size; a mix has its size classes.
func TestRateListProbeAndMixCharts(t *testing.T) {
	c := openRun(t, fixture.WriteOpenLoop)
	kinds := map[string][]string{}
	for _, ch := range Charts(c) {
		kinds[ch.Kind] = append(kinds[ch.Kind], ch.Name)
	}
	if got := strings.Join(kinds["load"], " "); got != "GET-1MiB-load-p99 GET-64MiB-load-p99 GET-1MiBw60+16MiBw30+64MiBw10-load-p99" {
		t.Errorf("load charts: %s", got)
	}
	if got := strings.Join(kinds["probe"], " "); !strings.Contains(got, "probe-p99") || !strings.Contains(got, "probe-added-p99") {
		t.Errorf("probe charts: %s", got)
	}
	if len(kinds["mix"]) != 4 { // Gbps and p99, at each of two rates
		t.Errorf("mix charts: %v", kinds["mix"])
	}
}

// A load whose queue grew is the knee on the chart as in the record, even
// when its achieved rate reads 100 % (its requests complete later): the
// points carry each load's lateness slope (median over repetitions).
func TestLoadPointsCarryTheQueuesGrowth(t *testing.T) {
	steps := func(slope float64) []lab.StepResult {
		return []lab.StepResult{
			{Step: 0, Offered: 100, Achieved: 100, Latency: &lab.StepLatency{Count: 100, P50: 500, P99: 1000}},
			{Step: 1, Offered: 200, Achieved: 200, Latency: &lab.StepLatency{Count: 200, P50: 500, P99: 1100}},
			{Step: 2, Offered: 300, Achieved: 300, LatenessSlope: slope, Latency: &lab.StepLatency{Count: 300, P50: 600, P99: 1500}},
		}
	}
	recs := []*sweeps.CellRecord{{Result: &lab.Result{Steps: steps(0.3)}}, {Result: &lab.Result{Steps: steps(0.2)}}, {Result: &lab.Result{Steps: steps(0)}}}
	pts := rampPoints(recs)
	if pts[2].Slope != 0.2 {
		t.Fatalf("step 2's slope %v, want the median 0.2", pts[2].Slope)
	}
	if k := pace.Knee(asSteps(pts)); k == nil || k.Step != 2 || !k.Queue {
		t.Errorf("knee %+v, want step 2 by its queue", k)
	}
}
