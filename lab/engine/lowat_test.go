package engine_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/labtest"
)

// Replies of sizes on both sides of rawsock.RecvLowat, pipelined, small
// ones among them, all arrive whole and on time: a reader that lets the
// kernel gather bytes before it wakes never waits for bytes that are not
// coming (a reply's end, a small reply behind a large one). With the drop
// in the kernel and with copies, and with every byte checked.
func TestRepliesAroundTheWakeChunkAllArrive(t *testing.T) {
	mix, err := lab.ParseSizeMix("100:1,262143:1,262144:1,262145:1,1048579:1")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		verify  lab.Verify
		noTrunc string
	}{{lab.VerifyNone, "0"}, {lab.VerifyNone, "1"}, {lab.VerifyHeader, "0"}, {lab.VerifyFull, "0"}} {
		t.Run(fmt.Sprintf("verify=%s,LINERATE_NO_MSG_TRUNC=%s", c.verify, c.noTrunc), func(t *testing.T) {
			t.Setenv("LINERATE_NO_MSG_TRUNC", c.noTrunc)
			// One request in flight: nothing behind a reply lifts a mark
			// left too high, so the connection stops on it.
			w := lab.Workload{Host: "127.0.0.1", Connections: 2, Threads: 1, Pipeline: 1, Keyspace: 64, ValueSz: mix,
				Ratio: lab.Ratio{Gets: 1}, Verify: c.verify, Warmup: lab.Duration(100 * time.Millisecond),
				Seed: 7,
				// A reply held back for bytes that never come stops its
				// connection: its request times out in the drain, an
				// error, not an abandoned request.
				RequestTimeout: lab.Duration(labtest.RequestTimeout)}
			// 20/s: ~60 replies of the mix's 5 sizes a run, each size
			// many times; at 50/s each emulated run verified 2.5 times
			// the bytes.
			w = pacedWindow(w, 20)
			w.Port = startSink(t, w, 0)
			res := run(t, w)
			g := res.Ops[lab.OpGet]
			if g == nil {
				t.Fatalf("no GETs in %+v", res)
			}
			t.Logf("%d GETs, %.2f Gbps, %d abandoned, errors %v", g.Ops, g.Gbps, res.Abandoned, g.Errors)
			if g.Ops == 0 {
				t.Errorf("no GET completed")
			}
			if len(g.Errors) != 0 || len(res.Errors) != 0 || g.Verify.Failed != 0 {
				t.Errorf("errors %v / %v, verify %+v", g.Errors, res.Errors, g.Verify)
			}
			if c.verify == lab.VerifyFull && g.Verify.Checked != g.Ops {
				t.Errorf("checked %d of %d replies", g.Verify.Checked, g.Ops)
			}
			if res.Abandoned > uint64(w.Connections*w.Pipeline) {
				t.Errorf("%d requests abandoned; at most the %d in flight at the end", res.Abandoned, w.Connections*w.Pipeline)
			}
		})
	}
}
