package lab_test

import (
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
)

// part is a record of n GETs whose latencies are lat(i) µs, over a window
// that opened at start (its host's clock) and lasted 3 s, one op a second
// counted in the series.
func part(t *testing.T, n int, lat func(i int) int64, start time.Time, stop lab.StopReason) *lab.Result {
	t.Helper()
	h := lab.NewHistogram()
	secs := make([]lab.SecondSample, 3)
	for i := range secs {
		secs[i].Second = i
	}
	for i := range n {
		lab.RecordUs(h, lat(i)*1000)
		secs[i%3].Ops++
		secs[i%3].PayloadBytes += 1 << 20
	}
	for i := range secs {
		sh := lab.NewHistogram()
		lab.RecordUs(sh, lat(i)*1000)
		enc, err := lab.Summarize(sh)
		if err != nil {
			t.Fatal(err)
		}
		secs[i].Histogram, secs[i].P99 = enc.Histogram, enc.P99
	}
	sum, err := lab.Summarize(h)
	if err != nil {
		t.Fatal(err)
	}
	s := start
	return &lab.Result{
		Started: start.Add(-time.Second), Ended: start.Add(4 * time.Second),
		Window: lab.Window{Start: &s, Measured: lab.Duration(3 * time.Second)},
		Ops: map[lab.Op]*lab.OpResult{lab.OpGet: {Ops: uint64(n), OpsPerSec: float64(n) / 3, PayloadBytes: uint64(n) << 20,
			WireRecvd: uint64(n) * (1<<20 + 30), Latency: sum, Series: secs}},
		Phases: map[lab.Phase]*lab.PhaseTotals{lab.PhaseMeasure: {Ops: map[lab.Op]uint64{lab.OpGet: uint64(n)}, WireRecvd: uint64(n) * (1<<20 + 30)}},
		Errors: map[lab.ErrorKind]uint64{},
		Client: lab.ClientUsage{ProcessUserSec: 1, Workers: []lab.WorkerUsage{{Worker: 0, Busy: 0.5}, {Worker: 1, Busy: 0.7}}, MaxWorkerBusy: 0.7},
		Stop:   lab.Stop{Reason: stop},
	}
}

func TestMergeSumsAndMergesHistograms(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	a := part(t, 900, func(i int) int64 { return int64(100 + i) }, t0, lab.StopCompleted)
	// The second host's clock is 2 s ahead; its window opened 200 ms
	// after the first's.
	b := part(t, 300, func(i int) int64 { return int64(5000 + 10*i) }, t0.Add(2*time.Second+200*time.Millisecond), lab.StopCompleted)
	mix, err := lab.ParseSizeMix("1MiB:60,16MiB:30,64MiB:10")
	if err != nil {
		t.Fatal(err)
	}
	realized := mix.Realize(1, 20)
	a.SizeMix, b.SizeMix = &realized, &realized
	// A probe at 200/s runs 5.5 s alone: the warmup as run is 7 s.
	w := lab.Workload{Connections: 4, Duration: lab.Duration(3 * time.Second), Warmup: lab.Duration(2 * time.Second),
		Probe: lab.Probe{Size: 100, Rate: lab.Rate{PerSec: 200}}}
	m, err := lab.Merge(w, []lab.Part{{Host: "client", Result: a}, {Host: "client-2", Result: b, Offset: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	g := m.Ops[lab.OpGet]
	if g.Ops != 1200 || g.PayloadBytes != 1200<<20 || g.WireRecvd != 1200*(1<<20+30) {
		t.Errorf("merged ops %d payload %d wire %d, want the sums", g.Ops, g.PayloadBytes, g.WireRecvd)
	}
	// The p99 of the merged record is the p99 of every latency both
	// clients saw, not a mix of their p99s.
	all := lab.NewHistogram()
	for i := range 900 {
		lab.RecordUs(all, int64(100+i)*1000)
	}
	for i := range 300 {
		lab.RecordUs(all, int64(5000+10*i)*1000)
	}
	if want := float64(all.ValueAtQuantile(99)); g.Latency.P99 != want || g.Latency.Count != 1200 {
		t.Errorf("merged p99 %v over %d, want %v over 1200 (p99s were %v and %v)", g.Latency.P99, g.Latency.Count, want, a.Ops[lab.OpGet].Latency.P99, b.Ops[lab.OpGet].Latency.P99)
	}
	if m.Window.Start == nil || !m.Window.Start.Equal(t0.Add(200*time.Millisecond)) || m.Window.Measured.D() != 2800*time.Millisecond {
		t.Errorf("window %v for %v, want the intersection: %v for 2.8s", m.Window.Start, m.Window.Measured, t0.Add(200*time.Millisecond))
	}
	if len(g.Series) != 3 || g.Series[0].Ops != 400 || g.Series[0].Histogram == "" {
		t.Errorf("series %+v, want 3 seconds of both clients", g.Series)
	}
	if s0 := g.Series[0]; s0.P99 < 5000*0.95 {
		t.Errorf("second 0 p99 %v: the merged second's histogram holds the slow client's 5000 µs", s0.P99)
	}
	if m.Phases[lab.PhaseMeasure].Ops[lab.OpGet] != 1200 || len(m.Client.Workers) != 4 || m.Client.Workers[3].Worker != 3 || m.Client.ProcessUserSec != 2 {
		t.Errorf("phases %+v, client %+v", m.Phases[lab.PhaseMeasure], m.Client)
	}
	if m.Stop.Reason != lab.StopCompleted {
		t.Errorf("stop %+v", m.Stop)
	}
	if m.SizeMix == nil || m.SizeMix.Classes[2].Keys != 1 || m.Window.Warmup.D() != 7*time.Second {
		t.Errorf("size_mix %+v, warmup %s: want the parts' realized mix and the warmup as run", m.SizeMix, m.Window.Warmup)
	}
}

func TestMergeNamesTheHostThatFailed(t *testing.T) {
	t0 := time.Now()
	a := part(t, 10, func(i int) int64 { return 100 }, t0, lab.StopCompleted)
	b := part(t, 10, func(i int) int64 { return 100 }, t0, lab.StopServerLost)
	b.Stop.Error = "every connection failed"
	m, err := lab.Merge(lab.Workload{}, []lab.Part{{Host: "client", Result: a}, {Host: "client-2 (10.0.0.3)", Result: b}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Stop.Reason != lab.StopServerLost || !strings.Contains(m.Stop.Error, "client-2 (10.0.0.3)") {
		t.Errorf("stop %+v, want the second client's, named", m.Stop)
	}
	b.Ops[lab.OpGet] = nil
	if _, err := lab.Merge(lab.Workload{}, []lab.Part{{Host: "client", Result: a}, {Host: "client-2", Result: b}}); err == nil || !strings.Contains(err.Error(), "client-2") {
		t.Errorf("a record with a null op: %v", err)
	}
	if _, err := lab.Merge(lab.Workload{}, []lab.Part{{Host: "client", Result: nil}}); err == nil {
		t.Error("no record merged")
	}
}

func TestSumLive(t *testing.T) {
	a := &lab.Live{Phase: lab.PhaseMeasure, Final: true, Counts: []lab.LiveCount{{Phase: lab.PhaseMeasure, Op: lab.OpGet, OK: 3, PayloadBytes: 30, Latency: []uint64{1, 2}}}}
	b := &lab.Live{Phase: lab.PhaseWarmup, Counts: []lab.LiveCount{{Phase: lab.PhaseMeasure, Op: lab.OpGet, OK: 4, PayloadBytes: 40, Latency: []uint64{0, 1, 3}},
		{Phase: lab.PhaseWarmup, Op: lab.OpSet, OK: 1, Errors: map[lab.ErrorKind]uint64{lab.ErrTimeout: 2}}}}
	s := lab.SumLive([]*lab.Live{a, b})
	g := s.Count(lab.PhaseMeasure, lab.OpGet)
	if g == nil || g.OK != 7 || g.PayloadBytes != 70 || len(g.Latency) != 3 || g.Latency[1] != 3 || g.Latency[2] != 3 {
		t.Errorf("measure GET %+v", g)
	}
	if w := s.Count(lab.PhaseWarmup, lab.OpSet); w == nil || w.Errors[lab.ErrTimeout] != 2 || s.Final || s.Phase != lab.PhaseMeasure {
		t.Errorf("sum %+v", s)
	}
	if a.Counts[0].OK != 3 || len(a.Counts[0].Latency) != 2 {
		t.Errorf("the first run's counts changed: %+v", a.Counts[0])
	}
}

// Two clients of one cluster: redirects summed per op and in all, each
// node's connections summed, its keys as one client dealt them.
func TestMergeCluster(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	a := part(t, 10, func(i int) int64 { return 100 }, t0, lab.StopCompleted)
	b := part(t, 10, func(i int) int64 { return 100 }, t0, lab.StopCompleted)
	nodes := func() []lab.ClusterNode {
		return []lab.ClusterNode{{Addr: "n1:1", Slots: 8192, Keys: 5, Connections: 2}, {Addr: "n2:2", Slots: 8192, Keys: 5, Connections: 1}}
	}
	a.Cluster = &lab.ClusterRun{Nodes: nodes(), Moved: 3, Ask: 1}
	b.Cluster = &lab.ClusterRun{Nodes: nodes(), Moved: 4}
	a.Ops[lab.OpGet].Redirects = &lab.Redirects{Moved: 2, Ask: 1}
	b.Ops[lab.OpGet].Redirects = &lab.Redirects{Moved: 3}
	m, err := lab.Merge(lab.Workload{Connections: 6, Duration: lab.Duration(3 * time.Second)}, []lab.Part{{Host: "c1", Result: a}, {Host: "c2", Result: b}})
	if err != nil {
		t.Fatal(err)
	}
	if r := m.Ops[lab.OpGet].Redirects; r == nil || r.Moved != 5 || r.Ask != 1 {
		t.Errorf("GET redirects %+v, want moved 5 ask 1", r)
	}
	c := m.Cluster
	if c == nil || c.Moved != 7 || c.Ask != 1 || len(c.Nodes) != 2 || c.Nodes[0].Connections != 4 || c.Nodes[1].Connections != 2 || c.Nodes[0].Keys != 5 {
		t.Errorf("merged cluster %+v", c)
	}
}
