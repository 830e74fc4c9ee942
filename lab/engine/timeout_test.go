package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/engine"
)

// --request-timeout is per request, not per pipeline: with -P 8 of 1 MiB
// values against a server that answers each request of a connection in
// turn, 500 ms after the one before (a 3.5 s timeout), no request times
// out, though the 8th sent at the start waits 4 s or more behind the
// other 7, and those in flight when the window closes each get their own
// time in the drain (none is abandoned). The timeout and the window are
// that long because make test was seen to freeze a process (the sink's
// too: it is this one) for up to 2.5 s: a window it covers sends nothing,
// and a freeze between two replies adds to the wait for the second.
func TestPipelinedRequestsEachHaveTheTimeout(t *testing.T) {
	t.Parallel()
	w := lab.Workload{Host: "127.0.0.1", Connections: 1, Pipeline: 8, Threads: 1, Keyspace: 16,
		// 1 MiB: the waits behind the sink's delays are what outlast
		// the timeout, whatever the size; a reply's own transfer stays
		// far inside the 3 s the timeout leaves it beside the delay
		// (0.5 s beside a 2.5 s freeze too). 16 MiB made the in-process
		// sink and the reads most of the test's CPU, 10x emulated.
		ValueSz: lab.OneSize(1 << 20), Verify: lab.VerifyHeader, Seed: 3,
		Duration: freezeWindow, RequestTimeout: lab.Duration(3500 * time.Millisecond)}
	w.Port = startSink(t, w, 500*time.Millisecond)
	res, err := runErr(t, w)
	if err != nil || len(res.Errors) != 0 || res.Abandoned != 0 {
		t.Fatalf("errors %v, %d abandoned (%v): a request queued behind others ran out of their time", res.Errors, res.Abandoned, err)
	}
	var done uint64
	for _, p := range res.Phases {
		done += p.Ops[lab.OpGet]
	}
	if done < 8 {
		t.Errorf("%d GETs completed, want at least the 8 sent at the start", done)
	}
}

// runErr is a run that may end in failed requests.
func runErr(t *testing.T, w lab.Workload) (*lab.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := engine.Run(ctx, w, engine.Options{})
	if res == nil {
		t.Fatalf("run: %v", err)
	}
	return res, err
}
