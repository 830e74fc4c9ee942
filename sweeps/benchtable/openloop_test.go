package benchtable

import (
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/labtest"
)

// The open-loop schedule's run: 1000 requests/s of 4 KiB GETs on 2
// connections for 30 s against linerate sink, long enough for a drift a
// short run cannot show.
const (
	openRate   = 1000
	openWindow = 30 * time.Second
	openDue    = openRate * 30
)

// sinkArgs are the sink's and the bench's shared flags: the sink serves
// every key at the size the bench asks for and verifies.
var sinkArgs = []string{"-s", "4KiB", "-n", "8", "--seed", "3"}

// lateGoal: the engine's share of requests sent late is at most twice the
// machine's own timers' late wakes on the same schedule plus one point:
// a late engine shows above it, a shared machine whose timers wake late
// moves both.
var lateGoal = goal{AtMost: true, K: 2, C: 1}

// BenchmarkOpenLoopSchedule: linerate paced at 1000/s for 30 s, and the
// machine's own timers on the same schedule (labtest.TimerLate: a locked
// thread sleeping to each deadline in epoll waits, as the raw engine's
// worker does), alternated. Rows: requests sent and completed against
// those due, and the share sent late against the timers' late wakes.
func BenchmarkOpenLoopSchedule(b *testing.B) {
	results.guard(b, secOpenLoop, "open-loop schedule")
	bin := labtest.Binary(b)
	sink := labtest.StartSink(b, bin, nil, sinkArgs...)
	results.where(secOpenLoop, fmt.Sprintf("loopback: linerate bench --rate %d -d %s (GET 4KiB, -c 2, -t 1, raw engine) against linerate sink; late is sent more than %s after its intended time; the timers are %d epoll waits %s apart on a locked thread",
		openRate, openWindow, lab.LateAfter, openDue, time.Second/openRate))
	var sent, done, late, timers, due []float64
	var ns []string
	alternate(rounds, func() {
		args := append([]string{"-p", strconv.Itoa(sink.Port), "-c", "2", "-t", "1", "--rate", strconv.Itoa(openRate), "-d", openWindow.String()}, sinkArgs...)
		r, _, err := benchCLI(b, bin, openWindow, args...)
		due = append(due, openDue)
		if err != nil || r.OpenLoop == nil || r.Ops[lab.OpGet] == nil {
			sent, done, late = append(sent, math.NaN()), append(done, math.NaN()), append(late, math.NaN())
			ns = append(ns, errNote(err))
			return
		}
		ol := r.OpenLoop
		sent, done = append(sent, float64(ol.Sent)), append(done, float64(r.Ops[lab.OpGet].Ops))
		late = append(late, 100*float64(ol.Late)/float64(max(ol.Sent, 1)))
	}, func() {
		n, err := labtest.TimerLate(openDue, time.Second/openRate, lab.LateAfter)
		timers = append(timers, orNaN(100*float64(n)/openDue, err))
		ns = append(ns, errNote(err))
	})
	what := fmt.Sprintf("open loop %d/s for %s:", openRate, openWindow)
	results.add(secOpenLoop,
		compare(what+" sent vs due", "requests", "requests", sent, due, atLeastX(0.995), ns...),
		compare(what+" completed vs due", "requests", "requests", done, due, atLeastX(0.995), ns...),
		compare(what+" late share vs machine timers", "%", "%", late, timers, lateGoal, ns...))
}

// BenchmarkProbe: the collateral probe (100 B GETs at 200/s) beside a
// tiny main load (5 GETs/s of 4 KiB) against linerate sink: what the main
// load adds to the probe's p99 is not above zero beyond the noise band the
// record gives it (each p99's 95 % order-statistic interval), so the
// band's low end is at most 0: the probe measures the main load, not
// itself.
func BenchmarkProbe(b *testing.B) {
	results.guard(b, secProbe, "probe beside a tiny load")
	bin := labtest.Binary(b)
	probe := []string{"--probe", "100B@200"}
	sink := labtest.StartSink(b, bin, nil, append(sinkArgs, probe...)...)
	const warmup, window = 2 * time.Second, 2 * time.Second
	results.where(secProbe, fmt.Sprintf("loopback: linerate bench --probe 100B@200 beside --rate 5 (GET 4KiB, -c 1, -t 1, --prefill) against linerate sink, %s warmup (after its first quarter the probe runs alone for 1,100 GETs, 5.5 s at 200/s, then the main load warms up for half of it), %s window; A is the band's low end, judged alone",
		warmup, window))
	var low, added, high, idle []float64
	var ns []string
	for range rounds {
		args := append(append([]string{"-p", strconv.Itoa(sink.Port), "-c", "1", "-t", "1", "--rate", "5", "--prefill",
			"--warmup", warmup.String(), "-d", window.String()}, sinkArgs...), probe...)
		r, _, err := benchCLI(b, bin, warmup+window, args...)
		if err == nil && r.Probe == nil {
			err = fmt.Errorf("no probe in the record")
		}
		if err != nil {
			low, added, high, idle = append(low, math.NaN()), append(added, math.NaN()), append(high, math.NaN()), append(idle, math.NaN())
			ns = append(ns, err.Error())
			continue
		}
		p := r.Probe
		low, added, high, idle = append(low, p.AddedLow), append(added, p.AddedP99), append(high, p.AddedHigh), append(idle, p.Idle.P99)
	}
	r := compare("probe added p99 beside 5/s: noise band's low end", "µs", "", low, nil, atMost(0), ns...)
	r.RawMore = map[string][]figure{"added_p99_us": figures(added), "added_p99_high_us": figures(high), "idle_p99_us": figures(idle)}
	if !math.IsNaN(median(added)) {
		r = r.with(fmt.Sprintf("added p99 %.0f µs, band [%.0f, %.0f]; alone p99 %.0f µs (medians)",
			median(added), median(low), median(high), median(idle)))
	}
	results.add(secProbe, r)
}
