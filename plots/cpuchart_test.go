package plots

import (
	"slices"
	"testing"

	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/hostmetrics"
)

// A cluster cell's CPU chart draws every node's threads, each labelled by
// its node; a one-process cell's keeps its plain labels.
func TestCPUChartDrawsEveryClusterNode(t *testing.T) {
	node := func(n, pid int, main float64) *hostmetrics.ProcWindow {
		return &hostmetrics.ProcWindow{PID: pid, Node: n, MainBusy: main, Threads: []hostmetrics.ThreadBusy{
			{TID: pid, Name: "valkey-server", Busy: main}, {TID: pid + 1, Name: "io_thd_1", Busy: 0.2}}}
	}
	labels := func(w *hostmetrics.Window) []string {
		ch := cpuChart(&Campaign{Run: &sweeps.Run{}}, &sweeps.CellRecord{CellID: "v/GET/1MiB/r1", Status: sweeps.StatusDone, Host: w})
		if ch == nil {
			t.Fatal("no chart")
		}
		var out []string
		for _, b := range ch.Bars {
			out = append(out, b.Label)
		}
		return out
	}
	// Node 2 was gone when sampled: node 3 keeps its number.
	got := labels(&hostmetrics.Window{Seconds: 1, Server: node(1, 10, 0.5), Nodes: []*hostmetrics.ProcWindow{node(3, 30, 0.1)}})
	want := []string{"node 1 main (valkey-server)", "node 3 main (valkey-server)", "node 1 io_thd_1", "node 3 io_thd_1"}
	if !slices.Equal(got, want) {
		t.Errorf("cluster bars %q, want %q", got, want)
	}
	if got := labels(&hostmetrics.Window{Seconds: 1, Server: node(0, 10, 0.5)}); !slices.Equal(got, []string{"main (valkey-server)", "io_thd_1"}) {
		t.Errorf("one process's bars %q", got)
	}
}
