package engine_test

import (
	"bytes"
	"context"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/engine"
	"github.com/linerate/linerate/lab/labtest"
)

// Every warmup and measure progress line must agree with itself: its Gbps
// is its ops/s times the value size. After a prefill the first warmup
// line once carried the prefill's bytes too ("warmup 1s/5s 61.14 Gbps
// 411 ops/s" at 8 MiB, where 411 ops/s is 27.6 Gbps).
func TestProgressLinesAgreeWithThemselves(t *testing.T) {
	t.Parallel()
	srv := labtest.StartRedis(t)
	// Paced: a line's Gbps is judged against its own ops/s, at any
	// speed; closed loop took both CPUs for the warmup and window.
	w := pacedWindow(shortWorkload(srv.Port), 100)
	w.ValueSz, w.Keyspace, w.Prefill = lab.OneSize(1<<20), 64, true // the prefill moves 0.54 Gbit
	w.Warmup = lab.Duration(1500 * time.Millisecond)
	var progress bytes.Buffer
	if _, err := engine.Run(context.Background(), w, engine.Options{Progress: &progress}); err != nil {
		t.Fatal(err)
	}
	lines := 0
	for _, line := range strings.Split(progress.String(), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || (f[0] != "warmup" && f[0] != "measure") {
			continue
		}
		gbps, err1 := strconv.ParseFloat(f[2], 64)
		ops, err2 := strconv.ParseFloat(f[4], 64)
		if err1 != nil || err2 != nil || f[3] != "Gbps" || f[5] != "ops/s" {
			t.Fatalf("progress line %q: want PHASE T/TOTAL GBPS Gbps OPS ops/s", line)
		}
		lines++
		// Gbps is printed to 0.01, ops/s to 0.1 (at most 0.0005 Gbps here).
		want := ops * float64(w.ValueSz.Max()) * 8 / 1e9
		if math.Abs(gbps-want) > 0.006 {
			t.Errorf("progress line %q: %.2f Gbps, but its ops/s make %.3f Gbps", line, gbps, want)
		}
	}
	if lines == 0 {
		t.Fatalf("no warmup or measure progress line in:\n%s", progress.String())
	}
}
