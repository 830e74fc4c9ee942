package engine

import (
	"net"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/lab/tlsgen"
)

// Over TLS the raw engine allocates nothing per request: a TLS 1.3
// session with AES-GCM reads and writes its records itself after the
// handshake (tlsrecord.go), each record opened in place in the
// connection's read buffer and sealed in place in its write buffer, and
// GET payloads are copied into the worker's reused scratch buffer. Through
// crypto/tls's Read every socket read allocated a small reader, about one
// per 16 KiB record, and the fresh heap pages behind them faulted in (up
// to 3 minor faults per 8 MiB GET). What is left is the stage's own
// setup, a few dozen whatever its length (64 allowed), and less than one
// per hundred requests besides.
func TestTLSAllocatesNothingPerRequest(t *testing.T) {
	b, err := tlsgen.Generate(tlsgen.Options{IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := b.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv := labtest.StartServerWith(t, labtest.Need(t, "redis-server"), nil, func(port int) []string { return f.ServerArgs(port, false) })
	for _, tc := range []struct {
		name  string
		ratio lab.Ratio
		size  lab.Size
	}{
		{"GET 4KiB", lab.Ratio{Gets: 1}, 4 << 10},
		{"SET 4KiB", lab.Ratio{Sets: 1}, 4 << 10},
		{"GET+SET 300KiB", lab.Ratio{Gets: 1, Sets: 1}, 300 << 10}, // more than a sealed chunk, more than scratch
	} {
		w := lab.Workload{Host: "127.0.0.1", Port: srv.Port, Connections: 2, Pipeline: 2, Threads: 1, Keyspace: 16,
			ValueSz: lab.OneSize(tc.size), Ratio: tc.ratio, Seed: 1, Prefill: tc.ratio.Gets > 0,
			TLS: lab.TLS{On: true, CACert: f.CA}}
		w.Duration = lab.Duration(500 * time.Millisecond)
		allocs, bytes, requests := allocsOfEnough(t, w, 500)
		if allocs > 64+requests/100 {
			t.Errorf("%s: %d allocations (%d bytes) for %d requests: more than the setup's and one per hundred", tc.name, allocs, bytes, requests)
		}
		t.Logf("%s: %d allocations, %d bytes, for %d requests", tc.name, allocs, bytes, requests)
	}
}
