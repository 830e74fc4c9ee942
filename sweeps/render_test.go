package sweeps

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
)

func TestWritePlanGolden(t *testing.T) {
	p := testPlan(t, strings.Replace(runSpec, "name: rt", "name: rt\nrepetitions: 2\nserver: {io-threads: 2, args: [--save, \"\"]}", 1))
	var out bytes.Buffer
	if err := WritePlan(&out, p); err != nil {
		t.Fatal(err)
	}
	golden(t, "plan_rt.txt", out.Bytes())
}

func TestProgressTerminalAndPlain(t *testing.T) {
	p := testPlan(t, runSpec)
	now := time.Unix(0, 0)
	for _, terminal := range []bool{true, false} {
		var out bytes.Buffer
		pr := NewProgress(&out, terminal).(*lineProgress)
		pr.now = func() time.Time { return now }
		pr.Begin(2, 20*time.Second)
		c := p.Cells[0]
		c.Estimate = 10 * time.Second
		pr.CellStart(c)
		now = now.Add(20 * time.Second) // twice as slow as estimated
		pr.CellEnd(c, &CellRecord{Status: StatusDone, Result: fakeResult(c.Workload, 3.5)})
		pr.End(&Summary{Planned: 2, Done: 1, Ran: 1})
		s := out.String()
		if terminal {
			if !strings.Contains(s, "\n[############............] 1/2 ETA 20s") {
				t.Errorf("terminal progress:\n%q", s)
			}
		} else if strings.Contains(s, "\r") || !strings.Contains(s, "sweep: 1/2 A/GET/1MiB/r1 GET 3.50 Gbps p99 1.50ms (eta 20s)") {
			t.Errorf("plain progress:\n%q", s)
		}
		now = time.Unix(0, 0)
	}
}

// The ETA counts what is left: the time before the first cell (the link
// calibration, which the estimate holds) is neither left to do nor a
// sign of a slow host, and after the last cell nothing is left. Seen in
// the ramp campaign: "sweep: 3/3 … (eta 1m48s)" after the last cell, and
// "1/3 … (eta 5m35s)" on an estimate of 1m43s.
func TestProgressETAAfterCalibration(t *testing.T) {
	p := testPlan(t, runSpec)
	now := time.Unix(0, 0)
	var out bytes.Buffer
	pr := NewProgress(&out, false).(*lineProgress)
	pr.now = func() time.Time { return now }
	// 3 cells of 10 s and a 60 s calibration, all as estimated.
	pr.Begin(3, 90*time.Second)
	now = now.Add(60 * time.Second)
	for i := range 3 {
		c := p.Cells[0]
		c.Estimate = 10 * time.Second
		pr.CellStart(c)
		now = now.Add(10 * time.Second)
		pr.CellEnd(c, &CellRecord{Status: StatusDone, Result: fakeResult(c.Workload, 3.5)})
		want := fmt.Sprintf("(eta %s)", time.Duration(20-10*i)*time.Second)
		if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); !strings.HasSuffix(lines[len(lines)-1], want) {
			t.Errorf("after cell %d: %q, want it to end %s", i+1, lines[len(lines)-1], want)
		}
	}
}

// A cell of more than one op ends its progress line with the cell's
// headline (CellFigure: Gbps summed, the worst op's p99); a cell of one
// op has it in the op's figures already.
func TestProgressCellHeadline(t *testing.T) {
	res := func(ops ...*lab.OpResult) *CellRecord {
		r := &lab.Result{Ops: map[lab.Op]*lab.OpResult{}}
		for i, o := range ops {
			r.Ops[[]lab.Op{lab.OpGet, lab.OpSet}[i]] = o
		}
		return &CellRecord{Status: StatusDone, Result: r}
	}
	get := &lab.OpResult{Gbps: 3.5, Latency: lab.LatencySummary{Count: 10, P99: 1500}}
	set := &lab.OpResult{Gbps: 2.25, Latency: lab.LatencySummary{Count: 10, P99: 4000}}
	idle := &lab.OpResult{}
	for _, tc := range []struct {
		rec  *CellRecord
		want string
	}{
		{res(get), "GET 3.50 Gbps p99 1.50ms"},
		{res(get, set), "GET 3.50 Gbps p99 1.50ms, SET 2.25 Gbps p99 4.00ms, total 5.75 Gbps worst p99 4.00ms"},
		{res(get, idle), "GET 3.50 Gbps p99 1.50ms, SET 0.00 Gbps p99 -, total 3.50 Gbps worst p99 1.50ms"},
		{res(idle, idle), "GET 0.00 Gbps p99 -, SET 0.00 Gbps p99 -, total 0.00 Gbps"},
	} {
		if got := cellSummary(tc.rec); got != tc.want {
			t.Errorf("progress %q\n          want %q", got, tc.want)
		}
	}
}

func TestSummaryExitCode(t *testing.T) {
	failed := []Failure{{CellID: "a"}}
	for _, tc := range []struct {
		s    Summary
		want int
	}{
		{Summary{Done: 2}, 0}, {Summary{Failed: failed}, 1}, {Summary{Interrupted: true, Failed: failed}, 130},
	} {
		if got := tc.s.ExitCode(); got != tc.want {
			t.Errorf("%+v: exit %d, want %d", tc.s, got, tc.want)
		}
	}
}
