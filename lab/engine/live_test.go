package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/engine"
	"github.com/linerate/linerate/lab/labtest"
)

// The live figures (what --metrics-listen serves) come from the progress
// tick, not from the record; at the run's end they must agree with the
// record exactly, phase by phase, and grow monotonically on the way.
func TestLiveFiguresAgreeWithTheRecord(t *testing.T) {
	t.Parallel()
	for _, name := range []string{lab.EngineRaw, lab.EngineValkeyGo} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := labtest.StartRedis(t)
			// Paced: it compares the live counts with the record's, which
			// 100/s gives hundreds of; closed loop took both CPUs.
			w := pacedWindow(shortWorkload(srv.Port), 100)
			w.Ratio, w.Prefill, w.Engine = lab.Ratio{Gets: 70, Sets: 30}, true, name
			w.Duration = lab.Duration(4 * time.Second) // a measure tick even when a 2.5 s freeze (seen in make test) swallows the first ones
			var ticks []*lab.Live
			res, err := engine.Run(context.Background(), w, engine.Options{Live: func(l *lab.Live) { ticks = append(ticks, l) }})
			if err != nil {
				t.Fatal(err)
			}
			if len(ticks) < 3 {
				t.Fatalf("%d live ticks for a %s run", len(ticks), w.Duration)
			}
			last := ticks[len(ticks)-1]
			if !last.Final || last.Server == "" {
				t.Fatalf("last tick %+v: want final and the server named", last)
			}
			seen := map[lab.Phase]bool{}
			for i, tk := range ticks {
				seen[tk.Phase] = true
				if i > 0 && tk.At.Before(ticks[i-1].At) {
					t.Errorf("tick %d goes back in time", i)
				}
				if i == 0 {
					continue
				}
				for _, c := range tk.Counts {
					if p := ticks[i-1].Count(c.Phase, c.Op); p != nil && (c.OK < p.OK || c.PayloadBytes < p.PayloadBytes) {
						t.Errorf("tick %d: %s %s went down: %+v after %+v", i, c.Phase, c.Op, c, p)
					}
				}
			}
			if !seen[lab.PhasePrefill] || !seen[lab.PhaseMeasure] {
				t.Errorf("phases seen %v: want prefill and measure", seen)
			}
			if c := last.Count(lab.PhasePrefill, lab.OpSet); c == nil || c.OK != uint64(w.Keyspace) {
				t.Errorf("prefill SETs %+v, want %d", c, w.Keyspace)
			}
			for op, o := range res.Ops {
				c := last.Count(lab.PhaseMeasure, op)
				if c == nil {
					t.Fatalf("no live %s count for the window", op)
				}
				if c.OK != o.Ops || c.PayloadBytes != o.PayloadBytes || c.Misses != o.Misses {
					t.Errorf("%s: live ok %d bytes %d misses %d; record ops %d bytes %d misses %d",
						op, c.OK, c.PayloadBytes, c.Misses, o.Ops, o.PayloadBytes, o.Misses)
				}
				var n uint64
				for _, b := range c.Latency {
					n += b
				}
				if n != c.OK || len(c.Latency) != len(lab.LiveLatencyBounds)+1 {
					t.Errorf("%s: %d latencies in %d buckets for %d requests", op, n, len(c.Latency), c.OK)
				}
				// The mean from the live sum is the record's mean, to the
				// HDR histogram's precision.
				if mean := c.LatencySum / float64(c.OK) * 1e6; mean < o.Latency.Mean*0.97 || mean > o.Latency.Mean*1.03 {
					t.Errorf("%s: live mean %.0f µs, record %.0f µs", op, mean, o.Latency.Mean)
				}
			}
		})
	}
}
