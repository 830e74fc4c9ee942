package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
)

// A server that holds every reply 400 ms makes each request 13 % of
// a 3 s window: the record lists GET's edge bias (its p99 past a tenth of
// the window) and says so in a note naming the -d that would fix it.
// Bounded by the server's minimum service time, not by this machine. The
// window holds seven requests so that one still completes in it when the
// machine stalls the process for two seconds (a 1 s window of 250 ms
// requests once completed none in make test).
func TestRecordSaysItsWindowIsTooShort(t *testing.T) {
	t.Parallel()
	const delay = 400 * time.Millisecond
	w := sinkWorkload()
	w.Duration = lab.Duration(3 * time.Second)
	w.Port = startSink(t, w, delay)
	res := run(t, w)
	if len(res.EdgeBias) != 1 {
		t.Fatalf("edge bias %+v, want GET's; notes %q", res.EdgeBias, res.Notes)
	}
	e := res.EdgeBias[0]
	if e.Op != lab.OpGet || e.By != "p99" || e.LatencyUs < float64(delay.Microseconds())*0.95 || e.Needs.D() < 10*delay {
		t.Errorf("edge bias %+v: want GET by p99, at least %s, needing at least %s", e, delay, 10*delay)
	}
	found := false
	for _, n := range res.Notes {
		found = found || (strings.Contains(n, "edge bias") && strings.Contains(n, "-d "+e.Needs.String()))
	}
	if !found {
		t.Errorf("no note of the edge bias: %q", res.Notes)
	}
}
