package hostmetrics

import (
	"fmt"
	"strings"
	"time"

	"github.com/linerate/linerate/lab"
)

// LimitKind is what most likely capped a cell's throughput.
type LimitKind string

const (
	LimitClient LimitKind = "client" // the load generator ran out: not the server's number
	LimitLink   LimitKind = "link"   // the wire (or loopback) was full
	// LimitLinkAllowance: the NIC's driver counted the cloud shaping the
	// link (ENA's *_allowance_exceeded rose in the window).
	LimitLinkAllowance LimitKind = "link-allowance"
	LimitPageFaults    LimitKind = "page-faults" // the server spent its time faulting in fresh pages
	LimitServerMain    LimitKind = "server-main" // the server's main thread was saturated
	LimitServerIO      LimitKind = "server-io"   // the server's I/O threads were saturated
	LimitHostCPU       LimitKind = "host-cpu"    // every core busy but no thread saturated: client, server and kernel share too few cores
	LimitUnclear       LimitKind = "unclear"     // nothing measured was saturated
)

// Limit is a cell's label with the evidence in words.
type Limit struct {
	Kind   LimitKind `json:"kind"`
	Detail string    `json:"detail"`
	// ClientLimited is set whenever the client was saturated, even if the
	// label names something else too: such a cell is never the server's figure.
	ClientLimited bool `json:"client_limited"`
}

// LimitInput is the evidence for one cell.
type LimitInput struct {
	Result *lab.Result
	Server *Window // server host over the measured window; may be nil
	// LinkGbps is the link's capacity in one direction; 0 when unknown
	// (loopback), which disables the link label.
	LinkGbps float64
	// CalibratedDown and CalibratedUp are the link's measured ceilings in
	// Gbps on the wire, server to client (GETs) and client to server
	// (SETs), from the calibration before the first cell; 0 when not
	// measured. A cell within LinkNear of either is the link's.
	CalibratedDown, CalibratedUp float64
	// Allowance names the NIC allowance counters that rose during the
	// window, with host and rise; any makes the label link-allowance.
	Allowance []string
	// FaultCost is the CPU one minor fault of a fresh page costs on this
	// host (~13 µs on the 2-vCPU VM here, ~1 µs on metal); 0 means 10 µs.
	FaultCost time.Duration
}

// Thresholds. A thread counts as saturated above Saturated of one CPU:
// closed-loop clients leave a few percent idle between replies even when
// the thread is the bottleneck.
const (
	Saturated     = 0.90
	LinkFull      = 0.90 // of LinkGbps
	LinkNear      = 0.95 // of the calibrated ceiling
	FaultCPUShare = 0.50 // fault time as a share of the busiest server thread
)

// Label names a cell's likely limit. Order of precedence: client (its cell
// is never the server's number), link (a hard ceiling), page faults (the
// cause when a saturated thread spent its time faulting), main thread, I/O
// threads.
func Label(in LimitInput) Limit {
	r := in.Result
	if r == nil {
		return Limit{Kind: LimitUnclear, Detail: "no result"}
	}
	var out Limit
	if why := clientLimited(r); why != "" {
		out = Limit{Kind: LimitClient, Detail: why, ClientLimited: true}
		return out
	}
	if len(in.Allowance) > 0 {
		return Limit{Kind: LimitLinkAllowance, Detail: "the NIC counted the instance's allowance exceeded: " + strings.Join(in.Allowance, ", ")}
	}
	if l, ok := linkLimit(r, in); ok {
		return l
	}
	if in.Server == nil || in.Server.Server == nil {
		return Limit{Kind: LimitUnclear, Detail: "no server thread metrics"}
	}
	// A cluster is judged by its busiest node, named in the detail.
	p := in.Server.Busiest()
	node := ""
	if name := p.NodeName(); name != "" {
		node = fmt.Sprintf("; %s, the busiest of %d sampled", name, len(in.Server.Processes()))
	}
	busiest := max(p.MainBusy, p.IOBusyMax)
	cost := in.FaultCost
	if cost <= 0 {
		cost = 10 * time.Microsecond
	}
	if in.Server.Seconds > 0 && busiest >= Saturated {
		faultCPU := float64(p.MinorFaults) * cost.Seconds() / in.Server.Seconds // CPUs' worth
		if faultCPU >= FaultCPUShare*busiest {
			return Limit{Kind: LimitPageFaults, Detail: fmt.Sprintf("%d minor faults (%.1f per op) cost ~%.0f%% of a CPU at %s each; busiest thread %.0f%%%s",
				p.MinorFaults, p.MinorFaultsPerOp, faultCPU*100, cost, busiest*100, node)}
		}
	}
	if p.MainBusy >= Saturated {
		return Limit{Kind: LimitServerMain, Detail: fmt.Sprintf("main thread %.0f%% busy%s", p.MainBusy*100, node)}
	}
	if p.IOThreads > 0 && p.IOBusyMax >= Saturated {
		return Limit{Kind: LimitServerIO, Detail: fmt.Sprintf("%d I/O threads, busiest %.0f%%, mean %.0f%%%s", p.IOThreads, p.IOBusyMax*100, p.IOBusyMean*100, node)}
	}
	if n, busy := coresBusy(in.Server.Cores); n > 0 && busy >= Saturated {
		// Threads wait for a CPU rather than for work: on one machine the
		// client, the server and the kernel's copies share the cores.
		return Limit{Kind: LimitHostCPU, Detail: fmt.Sprintf("all %d cores %.0f%% busy, no thread saturated (main %.0f%%, I/O max %.0f%%, client max %.0f%%)%s",
			n, busy*100, p.MainBusy*100, p.IOBusyMax*100, r.Client.MaxWorkerBusy*100, node)}
	}
	return Limit{Kind: LimitUnclear, Detail: fmt.Sprintf("no thread saturated (main %.0f%%, I/O max %.0f%%, client max %.0f%%)%s",
		p.MainBusy*100, p.IOBusyMax*100, r.Client.MaxWorkerBusy*100, node)}
}

// clientLimited says why the client was the limit, or "".
func clientLimited(r *lab.Result) string {
	if r.Client.MaxWorkerBusy >= Saturated {
		return fmt.Sprintf("busiest client worker %.0f%% busy", r.Client.MaxWorkerBusy*100)
	}
	for _, n := range r.Notes {
		if strings.HasPrefix(n, "client-limited") {
			return n
		}
	}
	return ""
}

// coresBusy is the number of cores and their mean busy fraction.
func coresBusy(cs []CoreBusy) (int, float64) {
	if len(cs) == 0 {
		return 0, 0
	}
	var sum float64
	for _, c := range cs {
		sum += c.Busy
	}
	return len(cs), sum / float64(len(cs))
}

// linkLimit labels a cell whose wire rate came within LinkFull of the
// link's nominal rate (--link-gbps) or within LinkNear of its calibrated
// ceiling in either direction.
func linkLimit(r *lab.Result, in LimitInput) (Limit, bool) {
	secs := r.Window.Measured.D().Seconds()
	if secs <= 0 {
		return Limit{}, false
	}
	var sent, recvd uint64
	for _, o := range r.Ops {
		sent += o.WireSent
		recvd += o.WireRecvd
	}
	gbps := func(b uint64) float64 { return float64(b) * 8 / secs / 1e9 }
	if dir := gbps(max(sent, recvd)); in.LinkGbps > 0 && dir >= LinkFull*in.LinkGbps {
		return Limit{Kind: LimitLink, Detail: fmt.Sprintf("%.1f Gbps on the wire of a %.0f Gbps link", dir, in.LinkGbps)}, true
	}
	for _, d := range []struct {
		what    string
		gbps    float64
		ceiling float64
	}{{"server to client", gbps(recvd), in.CalibratedDown}, {"client to server", gbps(sent), in.CalibratedUp}} {
		if d.ceiling > 0 && d.gbps >= LinkNear*d.ceiling {
			return Limit{Kind: LimitLink, Detail: fmt.Sprintf("%.2f Gbps %s on the wire, %.0f%% of the calibrated %.2f Gbps", d.gbps, d.what, d.gbps/d.ceiling*100, d.ceiling)}, true
		}
	}
	return Limit{}, false
}
