package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
)

// A server that holds every reply 250 ms makes each request a quarter of
// a 1 s window: the record lists GET's edge bias (its p99 past a tenth of
// the window) and says so in a note naming the -d that would fix it.
// Bounded by the server's minimum service time, not by this machine.
func TestRecordSaysItsWindowIsTooShort(t *testing.T) {
	t.Parallel()
	const delay = 250 * time.Millisecond
	w := sinkWorkload()
	w.Duration = lab.Duration(time.Second)
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
