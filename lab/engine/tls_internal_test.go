package engine

import (
	"net"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/lab/tlsgen"
)

// Over TLS the raw engine allocates no buffer per request: GET payloads
// are decrypted into the worker's reused scratch buffer, SETs are sealed
// through the connection's reused ciphertext buffer. What is left is
// crypto/tls's own: each time it reads the socket (readFromUntil) it
// allocates a 56-byte reader, once per record or per read that finds the
// socket empty. So the bound is on bytes: a buffer of the value's size per
// request would be 100 % of the payload; what crypto/tls takes is well
// under 1 % of it plus a few hundred bytes per request.
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
		if limit := requests * (256 + uint64(tc.size)/100); bytes > limit {
			t.Errorf("%s: %d bytes allocated for %d requests (more than %d)", tc.name, bytes, requests, limit)
		}
		t.Logf("%s: %d allocations, %d bytes, for %d requests", tc.name, allocs, bytes, requests)
	}
}
