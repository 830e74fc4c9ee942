package benchtable

import (
	"context"
	"fmt"
	"math"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/netns"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/calibrate"
	"github.com/linerate/linerate/sweeps/hostbench"
)

// The link calibration's runs here: each configuration's warmup and
// window, and the N of its N-flow runs.
const (
	linkWarmup = time.Second
	linkWindow = 2 * time.Second
	linkFlows  = 4
)

var goalLink = atLeastX(0.8)

// BenchmarkLinkCalibration: the calibration a campaign runs before its
// first cell (sweeps/calibrate: linerate sink on the server host, the
// bench from the client host, 1 and N flows, GET and SET) on a netns veth
// pair, each of its runs paired with iperf3 of the same configuration
// right beside it, on the same veth.
//
// A veth is no wire: it moves bytes as fast as the CPUs copy them, so the
// receivers must copy alike. iperf3 reads every byte into user space; the
// bench and the sink normally drop payloads in the kernel (MSG_TRUNC),
// which on a veth alone makes them a third faster. Here both copy
// (LINERATE_NO_MSG_TRUNC=1, the bench's and the sink's switch), as on a
// real NIC the link, not the copy, is the limit. TCP_NODELAY at both: with
// Nagle on, one iperf3 flow on this veth read 11-18 Gbit/s where -N read
// 16-29.
func BenchmarkLinkCalibration(b *testing.B) {
	results.guard(b, secLink, "link calibration vs iperf3")
	configs := []struct {
		op    lab.Op
		flows int
	}{{lab.OpGet, 1}, {lab.OpSet, 1}, {lab.OpGet, linkFlows}, {lab.OpSet, linkFlows}}
	if os.Geteuid() != 0 {
		for _, c := range configs {
			results.add(secLink, notMeasured(linkRow(c.op, c.flows), "network namespaces need root (make bench runs as root)"))
		}
		return
	}
	bin := labtest.Binary(b)
	iperf := iperf3Binary(b)
	b.Setenv("LINERATE_NO_MSG_TRUNC", "1") // the sink and the bench start from this process
	p := &netns.Provider{Binary: bin}
	b.Cleanup(func() { _ = p.Down(context.Background()) })
	pr, err := p.Up(context.Background(), infra.Spec{Campaign: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	srv, cli := netns.Of(pr.Server), netns.Of(pr.Client)
	results.where(secLink, fmt.Sprintf("netns veth pair %s <-> %s: sweeps/calibrate (linerate sink --link, bench 8MiB, 2 in flight, a thread per flow, %s warmup, %s window) vs %s -P N -N -O 1 (-R for GET), each run paired with its iperf3 beside it; both ends copy (LINERATE_NO_MSG_TRUNC=1)",
		srv.DataAddr(), cli.DataAddr(), linkWarmup, linkWindow, iperf3Version(iperf)))
	pb := &pairedBencher{b: hostbench.HostBencher{Host: cli}, pairs: map[string]*pairs{},
		peer: func(flows int, reverse bool) (float64, error) {
			return iperf3Gbps(iperf, srv.Command, cli.Command, srv.DataAddr().String(), iperfPort(), flows, reverse, linkWindow)
		}}
	pair := calibrate.Pair{Server: srv, One: pb, Clients: 1,
		Log: func(f string, a ...any) { fmt.Fprintf(os.Stderr, "bench: "+f+"\n", a...) }}
	k := sweeps.Calibration{Warmup: lab.Duration(linkWarmup), Duration: lab.Duration(linkWindow), ValueSize: 8 << 20}
	var problems []string
	for range rounds {
		if _, err := calibrate.Measure(context.Background(), pair, k, linkFlows); err != nil {
			problems = append(problems, err.Error())
		}
	}
	for _, c := range configs {
		ps := pb.pairs[linkRow(c.op, c.flows)]
		if ps == nil {
			ps = &pairs{}
		}
		results.add(secLink, compare(linkRow(c.op, c.flows), "Gbps", "Gbps", ps.ours, ps.theirs, goalLink, append(ps.notes, problems...)...))
	}
}

// linkRow names a configuration's row.
func linkRow(op lab.Op, flows int) string {
	return fmt.Sprintf("link %s 8MiB, %d flow(s) vs iperf3 -N", op, flows)
}

// pairs are one configuration's figures, a round each: the calibration's
// wire Gbps and iperf3's beside it.
type pairs struct {
	ours, theirs []float64
	notes        []string
}

// pairedBencher runs iperf3 in a calibration bench's configuration right
// beside it, after it in a configuration's first round, before it in the
// next, and so on: the machine is shared and its load moves over seconds
// (iperf3 alone read 10.8 and 14.9 Gbit/s a few seconds apart), so each
// calibration figure is paired with the iperf3 figure measured next to
// it, not one taken minutes away.
type pairedBencher struct {
	b     sweeps.Bencher
	peer  func(flows int, reverse bool) (float64, error)
	pairs map[string]*pairs // by row name
}

func (p *pairedBencher) Bench(ctx context.Context, w lab.Workload, mark func(lab.Phase)) (*lab.Result, error) {
	op := lab.OpSet
	if w.Ratio.Gets > 0 {
		op = lab.OpGet
	}
	key := linkRow(op, w.Connections)
	ps := p.pairs[key]
	if ps == nil {
		ps = &pairs{}
		p.pairs[key] = ps
	}
	var r *lab.Result
	var err error
	ours, theirs := math.NaN(), math.NaN()
	inOrder(len(ps.ours), func() {
		r, err = p.b.Bench(ctx, w, mark)
		if err == nil && r != nil && r.Stop.Reason == lab.StopCompleted {
			ours = calibrate.WireGbps(r, op)
		}
	}, func() {
		g, perr := p.peer(w.Connections, op == lab.OpGet)
		theirs = orNaN(g, perr)
		ps.notes = append(ps.notes, errNote(perr))
	})
	ps.ours, ps.theirs = append(ps.ours, ours), append(ps.theirs, theirs)
	return r, err
}

// iperfPorts hands out the iperf3 servers' ports in the server namespace,
// each once: a port free in this process's namespace (labtest.FreePort)
// says nothing of that one. The namespace is this benchmark's own, and
// the ports lie below the ephemeral range the sink's port comes from.
var iperfPorts atomic.Int32

func iperfPort() int { return 20000 + int(iperfPorts.Add(1)) }
