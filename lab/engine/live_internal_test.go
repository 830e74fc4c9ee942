package engine

import (
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
)

// The live counters sit on the hot path: recording a request must not
// allocate, and each latency lands in the bucket its bounds say.
func TestLiveCountsCostNoAllocation(t *testing.T) {
	w := lab.Workload{ValueSz: lab.OneSize(1 << 20)}
	e := &engine{w: w, layout: lab.NewValueLayout(int64(w.ValueSz.Max()), 1)}
	wk := e.newWorker(0)
	wk.sched = &schedule{warmupEnd: 0, measureEnd: int64(time.Hour), seconds: 1}
	for op := range wk.measure {
		wk.measure[op].series = make([]secStat, 1)
		wk.measure[op].secLat = make([]uint32, lab.LatBuckets)
	}
	e.workers = []*worker{wk}
	at := int64(time.Millisecond)
	r := req{op: opGet, sentAt: at - int64(1500*time.Microsecond), size: 1 << 20, class: -1} // 1.5 ms: the 2 ms bucket
	if n := testing.AllocsPerRun(1000, func() { wk.record(&r, ok, false, at, 100) }); n != 0 {
		t.Fatalf("record allocates %.1f times per request", n)
	}
	wk.record(&req{op: opSet, sentAt: at - int64(time.Minute), size: 1 << 20, class: -1}, ok, false, at, 5) // above the last bound
	wk.record(&req{op: opGet, sentAt: at, size: 1 << 20, class: -1}, eTimeout, false, at, 0)
	wk.record(&req{op: opGet, sentAt: at, size: 1 << 20, class: -1}, ok, true, at, 5)
	l := e.live(lab.PhaseMeasure, false)
	get, set := l.Count(lab.PhaseMeasure, lab.OpGet), l.Count(lab.PhaseMeasure, lab.OpSet)
	if get == nil || set == nil {
		t.Fatalf("counts %+v", l.Counts)
	}
	if get.OK != 1001 || get.Latency[4] != 1001 || get.PayloadBytes != 1001<<20 || get.Misses != 1 || get.Errors[lab.ErrTimeout] != 1 {
		t.Errorf("GET %+v", get)
	}
	if set.OK != 1 || set.Latency[len(lab.LiveLatencyBounds)] != 1 || set.LatencySum != 60 {
		t.Errorf("SET %+v", set)
	}
	if ops, bytes := e.progressTotals(); bytes != 1002<<20 || ops != 1002 || e.progressOps(phWarmup) != 0 {
		t.Errorf("progress: %d requests, %d bytes", ops, bytes)
	}
}
