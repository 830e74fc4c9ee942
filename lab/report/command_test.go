package report

import (
	"strings"
	"testing"

	"github.com/linerate/linerate/lab"
)

// An MGET run's summary names the command and its keys per request (an op
// is a request of that many keys) and prints the MGET row; a GET run's
// names neither. An MGET run has no GET:SET mix, so its header carries no
// -r (which read "-r 100:0" before).
func TestSummaryOfAnMGetRun(t *testing.T) {
	lat := lab.LatencySummary{Count: 100, P50: 900, P99: 3200}
	for _, tc := range []struct {
		cmd       lab.Command
		op        lab.Op
		want, not string
	}{
		{lab.CommandMGet, lab.OpMGet, "--command mget --keys-per-op 10", "-r "},
		{lab.CommandMSet, lab.OpMSet, "--command mset --keys-per-op 10", "-r "},
		{"", lab.OpGet, "-r 100:0", "--command"},
	} {
		r := &lab.Result{Workload: lab.Workload{Command: tc.cmd}.Resolve(),
			Ops: map[lab.Op]*lab.OpResult{tc.op: {Ops: 100, Gbps: 7.5, Latency: lat}}}
		var b strings.Builder
		WriteSummary(&b, r, nil)
		if !strings.Contains(b.String(), tc.want) || !strings.Contains(b.String(), string(tc.op)+"  7.50") ||
			(tc.not != "" && strings.Contains(b.String(), tc.not)) {
			t.Errorf("%q run: the summary lacks %q or its row, or says %q:\n%s", tc.cmd, tc.want, tc.not, b.String())
		}
	}
}
