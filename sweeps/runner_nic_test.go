package sweeps

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/linerate/linerate/infra/nicstats"
	"github.com/linerate/linerate/sweeps/hostmetrics"
)

// enaSource serves the ENA fixtures of infra/nicstats: the counters
// before a cell for its first read, after it for every later one.
type enaSource struct {
	t     *testing.T
	mu    sync.Mutex
	reads int
}

func (s *enaSource) NIC(context.Context) (NICInfo, error) {
	return NICInfo{Host: "server", Interface: "ens5", Driver: "ena", MTU: 9001}, nil
}

func (s *enaSource) Counters(context.Context) (nicstats.Counters, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := "ena-after.txt"
	if s.reads == 0 {
		name = "ena-before.txt"
	}
	s.reads++
	f, err := os.Open(filepath.Join("..", "infra", "nicstats", "testdata", name))
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	return nicstats.ParseEthtoolS(f)
}

// The runner reads each host's NIC around a cell: the record keeps the
// rise of ENA's trouble counters, an allowance that rose labels the cell
// link-allowance naming the counter, and the summary lists it. The link
// is calibrated once, before the first cell that runs, into env.json, and
// not again when every cell is kept.
func TestRunnerNICsAndCalibration(t *testing.T) {
	p := testPlan(t, strings.Replace(runSpec, "  - {store: valkey@8.1, label: B}\n", "", 1))
	dir := t.TempDir()
	r, _, _, out := newRunner(t, dir, p, nil)
	src := &enaSource{t: t}
	r.NICs = []NICSource{src}
	calibrations := 0
	r.Calibrate = func(context.Context) (*Link, error) {
		calibrations++
		src.mu.Lock()
		src.reads = 0 // every cell starts from the fixture's "before"
		src.mu.Unlock()
		return &Link{Connections: 2, GET: LinkDirection{PerFlowGbps: 5, Gbps: 9}, SET: LinkDirection{PerFlowGbps: 4, Gbps: 8}}, nil
	}
	r.Only = func(c Cell) bool { return c.ID == "A/GET/1MiB/r1" }
	sum, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	run, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	rec := run.Cells["A/GET/1MiB/r1"]
	if rec == nil || len(rec.NIC) != 1 {
		t.Fatalf("record %+v", rec)
	}
	d := rec.NIC[0]
	if d.Host != "server" || d.Interface != "ens5" || d.Driver != "ena" || d.Counters["bw_out_allowance_exceeded"] != 1834 ||
		d.Counters["pps_allowance_exceeded"] != 12 || d.Counters["queue_1_rx_xdp_drop"] != 40 {
		t.Errorf("NIC deltas %+v", d)
	}
	if _, ok := d.Counters["queue_0_tx_cnt"]; ok {
		t.Errorf("an unwatched counter is recorded: %v", d.Counters)
	}
	if rec.Limit == nil || rec.Limit.Kind != hostmetrics.LimitLinkAllowance || !strings.Contains(rec.Limit.Detail, "bw_out_allowance_exceeded +1834") {
		t.Errorf("limit %+v", rec.Limit)
	}
	if len(sum.Shaped) != 1 || !strings.Contains(SummaryText(sum), "link-allowance A/GET/1MiB/r1") {
		t.Errorf("summary:\n%s", SummaryText(sum))
	}
	if calibrations != 1 || run.Env.Link == nil || run.Env.Link.GET.Gbps != 9 {
		t.Errorf("%d calibrations, env link %+v", calibrations, run.Env.Link)
	}
	r.Only = func(c Cell) bool { return c.ID == "A/GET/1MiB/r1" } // done: kept
	if _, err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if calibrations != 1 {
		t.Errorf("calibrated again with nothing to run:\n%s", out)
	}
}
