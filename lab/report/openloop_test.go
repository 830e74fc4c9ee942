package report

import (
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
)

// A paced run's summary says what the pacing did, each step and the knee,
// each size class and the probe; a closed-loop run of one size says none
// of it.
func TestSummaryOfAPacedRun(t *testing.T) {
	lat := lab.LatencySummary{Count: 100, P50: 900, P99: 3200}
	r := &lab.Result{Workload: lab.Workload{ValueSz: lab.OneSize(1 << 20)}.Resolve(),
		Ops: map[lab.Op]*lab.OpResult{lab.OpGet: {Ops: 100, Latency: lat}}}
	var closed strings.Builder
	WriteSummary(&closed, r, nil)
	for _, not := range []string{"open loop", "knee", "per size class", "probe"} {
		if strings.Contains(closed.String(), not) {
			t.Errorf("a closed-loop summary mentions %q:\n%s", not, closed.String())
		}
	}
	r.Ops[lab.OpGet].Service = &lab.LatencySummary{Count: 100, P50: 800, P99: 1500}
	r.Ops[lab.OpGet].Sizes = []lab.SizeResult{{Class: 1 << 20, Ops: 60, Gbps: 1.5, Latency: &lab.StepLatency{Count: 60, P50: 700, P99: 2000}}, {Class: 16 << 20, Ops: 40}}
	mix, _ := lab.ParseSizeMix("1MiB:60,16MiB:30,64MiB:10")
	realized := mix.Realize(1, 20)
	r.SizeMix = &realized
	r.OpenLoop = &lab.OpenLoopResult{Arrival: lab.ArrivalPoisson, QueueLimit: lab.Duration(lab.DefaultQueueLimit), Offered: 300, Achieved: 250,
		Due: 1100, Sent: 900, Completed: 880, Failed: 20, Late: 40, Dropped: 150, Unsent: 50, LatenessSlope: 0.2}
	lab.JudgeOpenLoop(r.OpenLoop)
	r.Steps = []lab.StepResult{{Step: 0, Offered: 50, Achieved: 50, Latency: &lab.StepLatency{P99: 1000}}, {Step: 1, Offered: 800, Achieved: 400, Dropped: 150}}
	r.Knee = &lab.Knee{Step: 1, Offered: 800, FloorStep: 0, FloorP99: 1000, FloorP50: 400, AchievedRatio: 0.5, LatenessSlope: 0.3, Queue: true, Rate: true}
	r.Probe = &lab.ProbeResult{Probe: lab.Probe{Size: 100, Rate: lab.Rate{PerSec: 200}}, Idle: lab.LatencySummary{Count: 1100, P99: 300}, Latency: lab.LatencySummary{P99: 5300},
		IdleLength: lab.Duration(5500 * time.Millisecond), AddedP99: 5000, AddedLow: 4200, AddedHigh: 9000, Ops: 800}
	var b strings.Builder
	WriteSummary(&b, r, nil)
	for _, want := range []string{
		"open loop poisson arrivals: offered 300.0/s, achieved 250.0/s, lateness slope 0.2 s/s; NOT SUSTAINABLE",
		"due 1100: 880 completed, 20 failed, 150 dropped, 50 unsent; 40 of 900 sent late (> 1ms)",
		"not sustained: achieved 250 requests/s, 83.3 % of the 300 offered (at least 95 % sustains)",
		"not sustained: the queue grew: lateness rose 0.2 s per second of the window (at most 0.01 sustains); 50 requests still owed at its end",
		"not sustained: 150 requests dropped: they would have waited more than --queue-limit 1s",
		"GET latency from the intended send p99 3.20ms; service (from the real send) p50 800us p99 1.50ms",
		"knee      step 1 at 800.0/s by queue+rate: p99 0.00x and p50 0.00x the floor's, achieved 50% of offered, lateness slope 0.3 s/s; floor step 0 (p99 1.00ms, p50 400us)",
		"size mix  keys per class over 20 keys: 1MiB 12 (60%, asked 60%), 16MiB 7 (35%, asked 30%), 64MiB 1 (5%, asked 10%); mean 9.4 MiB, asked 11.8 MiB",
		"GET per size class",
		"1MiB   60  1.50  700us  2.00ms",
		"16MiB   40  0.00      -       -",
		"probe     100B@200: p99 alone 300us (1100 GETs in 5.5s), under load 5.30ms: added +5.00ms (band +4.20ms to +9.00ms)",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the summary lacks %q:\n%s", want, b.String())
		}
	}
	// A knee from a record written before the floor: no floor_step (0)
	// and no floor p99.
	r.Knee = &lab.Knee{Step: 1, Offered: 800, P99Ratio: 3, AchievedRatio: 1, Latency: true}
	b.Reset()
	WriteSummary(&b, r, nil)
	if want := "by latency: p99 3.00x and p50 0.00x the floor's, achieved 100% of offered, lateness slope 0 s/s; no step of the first third has a p99"; !strings.Contains(b.String(), want) {
		t.Errorf("the summary lacks %q:\n%s", want, b.String())
	}
	// Issue 25: a band holding zero read "added -6.88ms".
	r.Probe.Latency.P99, r.Probe.Idle.P99 = 5000, 11880
	r.Probe.AddedP99, r.Probe.AddedLow, r.Probe.AddedHigh, r.Probe.NoEffect = 0, -12600, 4700, true
	b.Reset()
	WriteSummary(&b, r, nil)
	if want := "added no measurable effect (band -12.6ms to +4.70ms)"; !strings.Contains(b.String(), want) || strings.Contains(b.String(), "added -") {
		t.Errorf("the summary lacks %q or says a negative added latency:\n%s", want, b.String())
	}
}
