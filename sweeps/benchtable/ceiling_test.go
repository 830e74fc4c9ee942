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

// ceilingWindow and ceilingWarmup are each ceiling run's; iperf3 leaves
// out its first second alike (-O 1).
const (
	ceilingWindow = 3 * time.Second
	ceilingWarmup = time.Second
)

// BenchmarkSinkCeiling: the client's own ceiling, linerate GET 8 MiB
// against `linerate sink` on loopback, beside iperf3 with as many flows
// (TCP_NODELAY, server to client), 1 flow and 8.
func BenchmarkSinkCeiling(b *testing.B) {
	results.guard(b, secCeiling, "sink ceiling vs iperf3")
	bin := labtest.Binary(b)
	iperf := iperf3Binary(b)
	sink := labtest.StartSink(b, bin, nil, "-s", "8MiB")
	results.where(secCeiling, fmt.Sprintf("loopback: linerate bench GET 8MiB (-c N, -t min(N,2), %s warmup, %s window; GET payloads dropped in the kernel) against linerate sink, vs %s -P N -N -R -O 1 -t %d (user-space copies at both ends)",
		ceilingWarmup, ceilingWindow, iperf3Version(iperf), int(ceilingWindow.Seconds())))
	for _, c := range []struct {
		flows int
		goal  goal
	}{{1, atLeastX(0.95)}, {8, atLeastX(1.0)}} {
		var lr, ip []float64
		var ns []string
		alternate(rounds, func() {
			g, err := sinkGbps(b, bin, sink.Port, c.flows)
			lr = append(lr, g)
			ns = append(ns, errNote(err))
		}, func() {
			g, err := iperf3Gbps(iperf, here, here, "127.0.0.1", labtest.FreePort(b), c.flows, true, ceilingWindow)
			ip = append(ip, orNaN(g, err))
			ns = append(ns, errNote(err))
		})
		name := fmt.Sprintf("sink ceiling GET 8MiB, %d conn(s) vs iperf3 -P %d -N", c.flows, c.flows)
		results.add(secCeiling, compare(name, "Gbps", "Gbps", lr, ip, c.goal, ns...))
	}
}

// sinkGbps is one linerate GET run of flows connections against the sink.
func sinkGbps(b *testing.B, bin string, port, flows int) (float64, error) {
	r, _, err := benchCLI(b, bin, ceilingWarmup+ceilingWindow, "-p", strconv.Itoa(port), "-c", strconv.Itoa(flows),
		"-t", strconv.Itoa(min(flows, 2)), "-s", "8MiB", "--warmup", ceilingWarmup.String(), "-d", ceilingWindow.String())
	if err != nil {
		return math.NaN(), err
	}
	if g := r.Ops[lab.OpGet]; g != nil && g.Ops > 0 {
		return g.Gbps, nil
	}
	return math.NaN(), fmt.Errorf("linerate completed no GET against the sink")
}

// orNaN is v, or NaN when err says it is none.
func orNaN(v float64, err error) float64 {
	if err != nil {
		return math.NaN()
	}
	return v
}

func errNote(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
