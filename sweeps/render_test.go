package sweeps

import (
	"bytes"
	"strings"
	"testing"
	"time"
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
