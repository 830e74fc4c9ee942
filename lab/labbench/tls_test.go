package labbench

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/lab/tlsgen"
)

// BenchmarkTLS: one server serving a plain port and a TLS port (a
// throwaway CA and certificate made here with lab/tlsgen); per cell,
// linerate over TLS, the peer with --tls, and linerate in plaintext, in
// alternation twice, medians compared: linerate vs the peer on TLS, and
// what TLS costs linerate on the same cell.
func BenchmarkTLS(b *testing.B) {
	bin := labtest.Binary(b)
	su := setup(b)
	bundle, err := tlsgen.Generate(tlsgen.Options{IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		b.Fatal(err)
	}
	files, err := bundle.Write(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	plain := labtest.FreePort(b)
	srv := labtest.StartServerWith(b, su.server, su.env, func(port int) []string {
		a := files.ServerArgs(port, false)
		a[1] = strconv.Itoa(plain) // --port: plaintext beside TLS, for the same cell without it
		return append(a, "--io-threads", "2")
	})
	info := labtest.Info(b, net.JoinHostPort("127.0.0.1", strconv.Itoa(plain)), "server")
	tlsArgs := []string{"--tls", "--cacert", files.CA}
	peer := filepath.Base(su.peer)
	peerWhy := peerTLS(su.peer, srv.Port, tlsArgs)
	fmt.Printf("\nTLS: linerate vs %s --tls, and linerate TLS vs plaintext: server %s %s (TLS port and plain port), -c %d, %d threads, %d keys, loopback, %s\n",
		peer, serverName(info), serverVersion(info), benchConns, benchThreads, benchKeys, hostLine())
	if peerWhy != "" {
		fmt.Printf("note: %s does not speak TLS here (%s): its columns are empty, not measured without TLS\n", peer, peerWhy)
	}
	fmt.Printf("%-5s %-6s %10s %10s %7s %12s %12s %7s %10s %9s %9s  %s\n", "op", "size", "lr Gbps", "peer Gbps", "ratio",
		"lr CPU-s/GB", "peer CPU-s/GB", "ratio", "plain Gbps", "tls/plain", "CPU ratio", "notes")
	for _, size := range []int64{1 << 20, 8 << 20} {
		for _, op := range []lab.Op{lab.OpGet, lab.OpSet} {
			var lr, pr, pl []measured
			var notes []string
			for round := 0; round < 2; round++ {
				m := runLinerate(b, bin, srv.Port, op, size, op == lab.OpGet && round == 0, tlsArgs...)
				lr = append(lr, m)
				var p measured
				if peerWhy == "" {
					p = runPeer(b, su.peer, srv.Port, op, size, tlsArgs...)
					pr = append(pr, p)
				}
				q := runLinerate(b, bin, plain, op, size, false)
				pl = append(pl, q)
				for _, x := range []measured{m, p, q} {
					if x.note != "" {
						notes = append(notes, x.note)
					}
				}
			}
			lg, _ := median(lr, func(m measured) float64 { return m.gbps })
			lc, _ := median(lr, func(m measured) float64 { return m.cpuPerGB })
			qg, qok := median(pl, func(m measured) float64 { return m.gbps })
			qc, _ := median(pl, func(m measured) float64 { return m.cpuPerGB })
			pgs, pcs, gr, cr := "-", "-", "-", "-"
			if pg, pok := median(pr, func(m measured) float64 { return m.gbps }); pok {
				pc, _ := median(pr, func(m measured) float64 { return m.cpuPerGB })
				pgs, pcs = fmt.Sprintf("%.2f", pg), fmt.Sprintf("%.3f", pc)
				if pg > 0 {
					gr, cr = fmt.Sprintf("%.2fx", lg/pg), fmt.Sprintf("%.2fx", lc/pc)
				} else {
					gr, pcs = "inf", "-" // the peer moved nothing: no cost per GB to compare
				}
			}
			tr, tc := "-", "-"
			if qok && qg > 0 {
				tr, tc = fmt.Sprintf("%.2fx", lg/qg), fmt.Sprintf("%.2fx", lc/qc)
			}
			fmt.Printf("%-5s %-6s %10.2f %10s %7s %12.3f %12s %7s %10.2f %9s %9s  %s\n", op, lab.Size(size), lg, pgs, gr, lc, pcs, cr, qg, tr, tc,
				strings.Join(dedupe(notes), "; "))
		}
	}
	fmt.Println("lr and peer columns are over TLS (Go's crypto/tls in linerate, OpenSSL in the peer), plain is linerate without TLS on the same server; tls/plain is linerate's Gbps and CPU-s/GB over TLS against without.")
}

// peerTLS asks the peer for a few PINGs over TLS: "" when it answered,
// else why not (a build without TLS says so and exits, or completes
// nothing).
func peerTLS(peer string, port int, tlsArgs []string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	args := append([]string{"-p", strconv.Itoa(port), "-n", "10", "-c", "1", "-t", "ping", "-q"}, tlsArgs...)
	out, err := exec.CommandContext(ctx, peer, args...).CombinedOutput()
	if err == nil && strings.Contains(string(out), "requests per second") {
		return ""
	}
	why := lastLine(string(out))
	if why == "" && err != nil {
		why = err.Error()
	}
	return why
}
