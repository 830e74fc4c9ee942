package engine

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/fields"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/lab/pace"
)

// The keys the engine asks a server for follow the workload's zipf law:
// over 500 keys, the top 10 keys' counts (and the rest, as one cell) pass
// Pearson's test against the exact law at p = 0.01. The peer records
// what each connection sends; each connection's pacer stops it after
// perConn requests, so the test reads the same draws on every run
// whatever the machine's speed, and takes as long as they do. α 0.9 was refused before lab/keys: Go's sampler needs
// α > 1.
func TestEngineDrawsZipfKeys(t *testing.T) {
	t.Parallel()
	const (
		keyspace = 500
		top      = 10
		conns    = 2
		perConn  = 6000
	)
	layout := lab.NewValueLayout(4096, 7)
	for _, alpha := range []float64{0.9, 1.4} {
		t.Run(fmt.Sprint("zipf:", alpha), func(t *testing.T) {
			p, seen := recordingPeer(t, layout)
			w := lab.Workload{Host: "127.0.0.1", Port: p.Port, Connections: conns, Pipeline: 16, Threads: 1,
				Keyspace: keyspace, ValueSz: lab.OneSize(lab.Size(layout.Size)), Seed: layout.Seed, Ratio: lab.Ratio{Gets: 1},
				Duration: lab.Duration(time.Minute), RequestTimeout: lab.Duration(labtest.RequestTimeout)}
			if err := w.KeyDist.Set("zipf:" + strconv.FormatFloat(alpha, 'g', -1, 64)); err != nil {
				t.Fatal(err)
			}
			w = w.Resolve()
			if err := fields.Validate(w); err != nil {
				t.Fatal(err)
			}
			e, err := openEngine(w, nil)
			if err != nil {
				t.Fatal(err)
			}
			e.pacers = func(int) pace.Pacer { return &scripted{limit: perConn} } // the stop ends the run
			e.measure(context.Background(), nil, nil)
			e.shutdown()
			counts := make([]int, top+1) // the top keys, then the rest
			seqs := seen()
			if len(seqs) != conns {
				t.Fatalf("%d connections sent requests, want %d", len(seqs), conns)
			}
			for c, seq := range seqs {
				if len(seq) < perConn {
					t.Fatalf("connection %d sent %d requests in %s; the test reads its first %d", c, len(seq), w.Duration, perConn)
				}
				for _, req := range seq[:perConn] {
					k, err := strconv.Atoi(strings.TrimPrefix(req, "GET "))
					if err != nil || k < 0 || k >= keyspace {
						t.Fatalf("connection %d asked for %q: not a key of the keyspace", c, req)
					}
					counts[min(k, top)]++
				}
			}
			prob := zipfLaw(alpha, keyspace, top)
			stat, bound := labtest.ChiSquare(counts, prob)
			t.Logf("zipf:%g top %d counts %v (of %d), chi-square %.1f, bound %.1f", alpha, top, counts[:top], conns*perConn, stat, bound)
			if stat > bound {
				t.Errorf("zipf:%g: the top %d keys' counts %v do not follow the law %.4f (chi-square %.1f > %.1f at p = 0.01)",
					alpha, top, counts[:top], prob[:top], stat, bound)
			}
		})
	}
}

// zipfLaw is P(key k) = (k+1)^-α / Σ_{j=1..n} j^-α for the first top keys,
// and what is left for the rest as one last cell, summed directly.
func zipfLaw(alpha float64, n, top int) []float64 {
	var sum float64
	for j := 1; j <= n; j++ {
		sum += math.Pow(float64(j), -alpha)
	}
	p := make([]float64, top+1)
	rest := 1.0
	for k := 0; k < top; k++ {
		p[k] = math.Pow(float64(k+1), -alpha) / sum
		rest -= p[k]
	}
	p[top] = rest
	return p
}
