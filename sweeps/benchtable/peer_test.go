package benchtable

import (
	"context"
	"fmt"
	"math"
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

// Goals of the comparisons against valkey-benchmark.
var (
	goalGbps    = atLeastX(1.0) // plaintext
	goalGbpsTLS = atLeastX(1.5)
	goalCPU     = atMostX(0.5) // client CPU-s/GB, GET and SET, plaintext and TLS
	goalFaults  = atMost(0.01) // minor faults per request over TLS
)

// BenchmarkVersusPeer: one server serving a plain port and a TLS port (a
// throwaway CA and certificate made with lab/tlsgen); per cell, linerate
// and the peer benchmark alternated on the plain port, then linerate
// --tls and the peer --tls on the TLS port. Rows: Gbps and client
// CPU-s/GB of each cell in plaintext and over TLS, and the TLS client's
// page faults per request beside plaintext's in the same cell.
func BenchmarkVersusPeer(b *testing.B) {
	results.guard(b, secPeer, "linerate vs the peer benchmark")
	results.guard(b, secTLS, "linerate --tls vs the peer benchmark --tls")
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
		a[1] = strconv.Itoa(plain) // --port: plaintext beside TLS, the same cells without it
		return append(a, "--io-threads", "2")
	})
	server := serverLine(b, net.JoinHostPort("127.0.0.1", strconv.Itoa(plain)))
	tlsArgs := []string{"--tls", "--cacert", files.CA}
	peer := filepath.Base(su.peer)
	peerWhy := peerTLS(su.peer, srv.Port, tlsArgs)
	cells := fmt.Sprintf("-c %d, %d threads, %d keys, %s windows, no warmup", benchConns, benchThreads, benchKeys, benchWindow)
	results.where(secPeer, fmt.Sprintf("%s (--io-threads 2, MALLOC_CONF=oversize_threshold:0 from the store) on loopback; linerate and %s alike: %s; CPU is whole-process user+sys per GB of payload (on loopback the kernel work of both ends lands in whichever process runs)",
		server, peer, cells))
	results.where(secTLS, fmt.Sprintf("the same server's TLS port (throwaway CA, lab/tlsgen): linerate --tls (crypto/tls handshake, then its own TLS 1.3 records) vs %s --tls (OpenSSL), same cells; faults are linerate's client minor faults per request over the window of runs of their own with a %s warmup, --tls beside plaintext on the plain port",
		peer, faultsWarmup))

	for _, size := range []int64{1 << 20, 8 << 20, 64 << 20} {
		for _, op := range []lab.Op{lab.OpGet, lab.OpSet} {
			cell := fmt.Sprintf("%s %s", op, lab.Size(size))
			// The first GET of a size writes its keys (--prefill); no
			// later run of the cell writes another size over them.
			prefill := op == lab.OpGet
			var lr, pr []run
			alternate(rounds, func() {
				lr = append(lr, runLinerate(b, bin, plain, op, size, prefill))
				prefill = false
			}, func() {
				pr = append(pr, runPeer(b, su.peer, plain, op, size))
			})
			results.add(secPeer, pairRows(cell, peer, goalGbps, lr, pr)...)

			var lt, pt []run
			alternate(rounds, func() {
				lt = append(lt, runLinerate(b, bin, srv.Port, op, size, false, tlsArgs...))
			}, func() {
				if peerWhy != "" {
					pt = append(pt, failed(fmt.Sprintf("%s --tls: %s", peer, peerWhy)))
					return
				}
				pt = append(pt, runPeer(b, su.peer, srv.Port, op, size, tlsArgs...))
			})
			results.add(secTLS, pairRows("TLS "+cell, peer+" --tls", goalGbpsTLS, lt, pt)...)
		}
	}
	// Faults per request over TLS beside plaintext, in runs of their own
	// with a warmup: the cells above have none (their whole-process CPU
	// is compared with the peer's), and in a window of few requests on a
	// loaded machine the client's start-up page touches read as 23.7
	// faults a request where a warmed run of the same cell read 0.02.
	for _, op := range []lab.Op{lab.OpGet, lab.OpSet} {
		var tf, pf []float64
		var ns []string
		alternate(rounds, func() {
			f, err := faultsPerRequest(b, bin, srv.Port, op, tlsArgs...)
			tf, ns = append(tf, f), append(ns, errNote(err))
		}, func() {
			f, err := faultsPerRequest(b, bin, plain, op)
			pf, ns = append(pf, f), append(ns, errNote(err))
		})
		name := fmt.Sprintf("TLS %s %s client minor faults/request vs plaintext", op, lab.Size(faultsSize))
		results.add(secTLS, compare(name, "faults", "faults", tf, pf, goalFaults, ns...))
	}
}

// faultsSize and faultsWarmup are the faults runs' value size and warmup.
const (
	faultsSize   = 8 << 20
	faultsWarmup = time.Second
)

// faultsPerRequest is the client's minor page faults per request over the
// window of one warmed-up run of a cell (GETs read keys it prefills).
func faultsPerRequest(b *testing.B, bin string, port int, op lab.Op, extra ...string) (float64, error) {
	args := append(cellArgs(port, op, faultsSize), "--warmup", faultsWarmup.String())
	if op == lab.OpGet {
		args = append(args, "--prefill")
	}
	r, _, err := benchCLI(b, bin, faultsWarmup+benchWindow, append(args, extra...)...)
	if err != nil {
		return math.NaN(), err
	}
	if o := r.Ops[op]; o == nil || o.Ops == 0 {
		return math.NaN(), fmt.Errorf("linerate completed no %s in the window", op)
	}
	return r.Client.MinorFaultsPerOp, nil
}

// pairRows are a cell's two rows: Gbps (goal g) and client CPU-s/GB, the
// latter noting the user-space share of each side: on loopback most of a
// sender's CPU is the kernel's (the receiver's softirq runs in the
// sender's send call), the same for both tools, and the user-space
// figures are each tool's own work.
func pairRows(cell, peer string, g goal, lr, pr []run) []row {
	ns := notes(lr, pr)
	cpu := compare(cell+" CPU-s/GB vs "+peer, "CPU-s/GB", "CPU-s/GB", each(lr, func(r run) float64 { return r.cpuPerGB }), each(pr, func(r run) float64 { return r.cpuPerGB }), goalCPU, ns...)
	lu, pu := median(each(lr, func(r run) float64 { return r.userPerGB })), median(each(pr, func(r run) float64 { return r.userPerGB }))
	if !math.IsNaN(lu) && !math.IsNaN(pu) && pu > 0 {
		cpu = cpu.with(fmt.Sprintf("user space %.3f vs %.3f CPU-s/GB (%.2fx), the rest the kernel's", lu, pu, lu/pu))
	}
	return []row{
		compare(cell+" Gbps vs "+peer, "Gbps", "Gbps", each(lr, func(r run) float64 { return r.gbps }), each(pr, func(r run) float64 { return r.gbps }), g, ns...),
		cpu,
	}
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
