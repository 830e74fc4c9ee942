package labbench

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/labtest"
)

// pacedRun is one bench of 1 MiB GETs, closed loop (rate "") or paced at
// rate requests/s, and the record's window figures.
func pacedRun(b *testing.B, bin string, port int, rate string) (opsPerSec, cpuPerGB, lateShare float64) {
	out := filepath.Join(b.TempDir(), "r.json")
	args := []string{"bench", "--quiet", "-p", strconv.Itoa(port), "-c", strconv.Itoa(benchConns), "-t", strconv.Itoa(benchThreads),
		"-n", strconv.Itoa(benchKeys), "--key-size", "16", "-s", "1MiB", "--prefill", "--warmup", "1s", "-d", benchWindow.String(), "--json", out}
	if rate != "" {
		args = append(args, "--rate", rate)
	}
	if msg, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		b.Fatalf("linerate %v: %v %s", args, err, lastLine(string(msg)))
	}
	r := readRecord(b, out)
	if ol := r.OpenLoop; ol != nil && ol.Sent > 0 {
		lateShare = float64(ol.Late) / float64(ol.Sent)
	}
	return r.Ops[lab.OpGet].OpsPerSec, r.Client.CPUSecPerGB, lateShare
}

// BenchmarkPacedVersusClosed: the client's CPU per GB paced at half the
// closed-loop rate against closed loop, on the same server, in
// alternation. Pacing costs a wake-up per request; per GB moved it should
// cost at most 1.2 times what closed loop does (whose CPU per GB does not
// depend on the rate it reaches: every request costs the same work).
func BenchmarkPacedVersusClosed(b *testing.B) {
	bin := labtest.Binary(b)
	su := setup(b)
	srv := labtest.StartServerEnv(b, su.server, su.env, "--io-threads", "2")
	info := labtest.Info(b, srv.Addr, "server")
	fmt.Printf("\npaced vs closed loop: GET 1MiB, server %s %s, -c %d, %d threads, loopback, %s\n",
		serverName(info), serverVersion(info), benchConns, benchThreads, hostLine())
	fmt.Printf("%-6s %12s %12s %14s %10s %8s\n", "round", "mode", "ops/s", "CPU-s/GB", "late", "ratio")
	var closed, paced []measured
	for round := 1; round <= 2; round++ {
		ops, cpu, _ := pacedRun(b, bin, srv.Port, "")
		closed = append(closed, measured{gbps: ops, cpuPerGB: cpu, done: true})
		fmt.Printf("%-6d %12s %12.1f %14.3f %10s\n", round, "closed", ops, cpu, "-")
		rate := strconv.FormatFloat(ops/2, 'f', 1, 64)
		pops, pcpu, late := pacedRun(b, bin, srv.Port, rate)
		paced = append(paced, measured{gbps: pops, cpuPerGB: pcpu, done: true})
		fmt.Printf("%-6d %12s %12.1f %14.3f %9.1f%% %7.2fx\n", round, "rate "+rate, pops, pcpu, late*100, pcpu/cpu)
	}
	cc, _ := median(closed, func(m measured) float64 { return m.cpuPerGB })
	pc, _ := median(paced, func(m measured) float64 { return m.cpuPerGB })
	co, _ := median(closed, func(m measured) float64 { return m.gbps })
	po, _ := median(paced, func(m measured) float64 { return m.gbps })
	fmt.Printf("paced at %.0f%% of the closed-loop rate: CPU-s/GB %.3f vs %.3f closed (medians), ratio %.2fx (target <= 1.2x); on loopback the server's kernel work lands partly in the client's CPU, more of it in closed loop\n",
		po/co*100, pc, cc, pc/cc)
}
