package benchtable

import (
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/labtest"
)

const pacedWarmup = time.Second

// BenchmarkPacedVersusClosed: the client's CPU per GB paced at half the
// closed-loop rate (A) against closed loop (B), on the same server, in
// alternation; each paced run takes its rate from the closed run before
// it. Pacing costs a wake-up per request; per GB moved it should cost at
// most 1.2 times what closed loop does (whose CPU per GB does not depend
// on the rate it reaches: every request costs the same work).
func BenchmarkPacedVersusClosed(b *testing.B) {
	results.guard(b, secPaced, "paced vs closed loop")
	bin := labtest.Binary(b)
	su := setup(b)
	srv := labtest.StartServerEnv(b, su.server, su.env, "--io-threads", "2")
	results.where(secPaced, fmt.Sprintf("%s on loopback, GET 1MiB, -c %d, %d threads, %d keys, %s warmup, %s window; CPU-s/GB is the record's (the window's client CPU)",
		serverLine(b, srv.Addr), benchConns, benchThreads, benchKeys, pacedWarmup, benchWindow))
	var paced, closed, share, late []float64
	var ns []string
	rate := 0.0 // the last closed run's ops/s
	alternate(rounds, func() {
		ops, cpu, _, err := pacedRun(b, bin, srv.Port, "")
		closed = append(closed, cpu)
		ns = append(ns, errNote(err))
		if err == nil {
			rate = ops
		}
	}, func() {
		if rate == 0 {
			paced, share, late = append(paced, math.NaN()), append(share, math.NaN()), append(late, math.NaN())
			ns = append(ns, "no closed-loop rate to pace at")
			return
		}
		ops, cpu, l, err := pacedRun(b, bin, srv.Port, strconv.FormatFloat(rate/2, 'f', 1, 64))
		paced, share, late = append(paced, cpu), append(share, ops/rate*100), append(late, l*100)
		ns = append(ns, errNote(err))
	})
	r := compare("paced at 50% CPU-s/GB vs closed loop, GET 1MiB", "CPU-s/GB", "CPU-s/GB", paced, closed, atMostX(1.2), ns...)
	r.RawMore = map[string][]figure{"paced_ops_share_of_closed_pct": figures(share), "paced_late_pct": figures(late)}
	if m := median(share); !math.IsNaN(m) {
		r = r.with(fmt.Sprintf("paced reached %.0f%% of closed loop's ops/s, %.1f%% late", m, median(late)))
	}
	results.add(secPaced, r)
}

// pacedRun is one bench of 1 MiB GETs, closed loop (rate "") or paced at
// rate requests/s, and the record's window figures: ops/s, CPU-s/GB and
// the share of paced requests sent late.
func pacedRun(b *testing.B, bin string, port int, rate string) (opsPerSec, cpuPerGB, lateShare float64, err error) {
	args := []string{"-p", strconv.Itoa(port), "-c", strconv.Itoa(benchConns), "-t", strconv.Itoa(benchThreads),
		"-n", strconv.Itoa(benchKeys), "--key-size", "16", "-s", "1MiB", "--prefill", "--warmup", pacedWarmup.String(), "-d", benchWindow.String()}
	if rate != "" {
		args = append(args, "--rate", rate)
	}
	r, _, err := benchCLI(b, bin, pacedWarmup+benchWindow, args...)
	if err != nil {
		return math.NaN(), math.NaN(), math.NaN(), err
	}
	if ol := r.OpenLoop; ol != nil && ol.Sent > 0 {
		lateShare = float64(ol.Late) / float64(ol.Sent)
	}
	g := r.Ops[lab.OpGet]
	if g == nil || g.Ops == 0 {
		return math.NaN(), math.NaN(), math.NaN(), fmt.Errorf("linerate completed no GET")
	}
	return g.OpsPerSec, r.Client.CPUSecPerGB, lateShare, nil
}
