package hostmetrics

import (
	"fmt"
	"sort"
	"strings"
)

// Window is what a host spent between two snapshots.
type Window struct {
	Seconds float64     `json:"seconds"`
	Server  *ProcWindow `json:"server,omitempty"`
	// Nodes are a cluster's other server processes over the window
	// (server.cluster: N), Server its first: each node is a process with
	// its own main thread, so one node's figures are not the cluster's.
	Nodes []*ProcWindow `json:"nodes,omitempty"`
	Cores []CoreBusy    `json:"cores"`
	NICs  []NICRate     `json:"nics"`
}

// ProcWindow is the server process over the window. Busy is a fraction of
// one CPU: 1.0 is a thread that never waited.
type ProcWindow struct {
	PID         int          `json:"pid"`
	Node        int          `json:"node,omitempty"` // a cluster node's number, 1 the first
	MainBusy    float64      `json:"main_busy"`
	IOThreads   int          `json:"io_threads"`
	IOBusyMax   float64      `json:"io_busy_max"`
	IOBusyMean  float64      `json:"io_busy_mean"`
	Threads     []ThreadBusy `json:"threads"`
	MinorFaults uint64       `json:"minor_faults"`
	// MinorFaultsPerOp is filled by the caller, who knows the op count.
	MinorFaultsPerOp float64 `json:"minor_faults_per_op"`
}

// ThreadBusy is one thread's CPU over the window.
type ThreadBusy struct {
	TID  int     `json:"tid"`
	Name string  `json:"name"`
	Busy float64 `json:"busy"`
}

// CoreBusy is one CPU's busy fraction over the window.
type CoreBusy struct {
	CPU  int     `json:"cpu"`
	Busy float64 `json:"busy"`
}

// NICRate is one interface's traffic over the window.
type NICRate struct {
	Name    string  `json:"name"`
	RxBytes uint64  `json:"rx_bytes"`
	TxBytes uint64  `json:"tx_bytes"`
	RxGbps  float64 `json:"rx_gbps"`
	TxGbps  float64 `json:"tx_gbps"`
}

// IsIOThread says whether a server thread name is an I/O thread: Valkey
// and Redis both name them io_thd_N.
func IsIOThread(name string) bool { return strings.HasPrefix(name, "io_thd_") }

// Diff is the window between snapshots a and b (b later). Threads that
// appear only in b started inside the window and count from zero; NICs
// idle over the window are left out.
func Diff(a, b *Snapshot) *Window {
	sec := b.At.Sub(a.At).Seconds()
	w := &Window{Seconds: sec}
	if sec <= 0 {
		return w
	}
	if a.Proc != nil && b.Proc != nil && a.Proc.PID == b.Proc.PID {
		w.Server = diffProc(a.Proc, b.Proc, sec)
	}
	for _, n := range b.Nodes {
		for _, p := range a.Nodes {
			if p.PID == n.PID {
				w.Nodes = append(w.Nodes, diffProc(p, n, sec))
				break
			}
		}
	}
	prevCore := map[int]CoreSample{}
	for _, c := range a.Cores {
		prevCore[c.CPU] = c
	}
	for _, c := range b.Cores {
		p, ok := prevCore[c.CPU]
		if !ok || c.Total <= p.Total {
			continue
		}
		w.Cores = append(w.Cores, CoreBusy{CPU: c.CPU, Busy: float64(c.Busy-p.Busy) / float64(c.Total-p.Total)})
	}
	prevNIC := map[string]NICSample{}
	for _, n := range a.NICs {
		prevNIC[n.Name] = n
	}
	for _, n := range b.NICs {
		p, ok := prevNIC[n.Name]
		if !ok || n.Rx < p.Rx || n.Tx < p.Tx || (n.Rx == p.Rx && n.Tx == p.Tx) {
			continue
		}
		r := NICRate{Name: n.Name, RxBytes: n.Rx - p.Rx, TxBytes: n.Tx - p.Tx}
		r.RxGbps = float64(r.RxBytes) * 8 / sec / 1e9
		r.TxGbps = float64(r.TxBytes) * 8 / sec / 1e9
		w.NICs = append(w.NICs, r)
	}
	return w
}

func diffProc(a, b *ProcSample, sec float64) *ProcWindow {
	pw := &ProcWindow{PID: b.PID, Node: b.Node}
	if b.MinFlt >= a.MinFlt {
		pw.MinorFaults = b.MinFlt - a.MinFlt
	}
	prev := map[int]ThreadSample{}
	for _, t := range a.Threads {
		prev[t.TID] = t
	}
	var ioSum float64
	for _, t := range b.Threads {
		p := prev[t.TID] // zero when the thread is new
		ticks := float64((t.UTicks + t.STicks) - (p.UTicks + p.STicks))
		if t.UTicks+t.STicks < p.UTicks+p.STicks {
			ticks = 0
		}
		tb := ThreadBusy{TID: t.TID, Name: t.Name, Busy: ticks / UserHZ / sec}
		pw.Threads = append(pw.Threads, tb)
		switch {
		case t.TID == b.PID:
			pw.MainBusy = tb.Busy
		case IsIOThread(t.Name):
			pw.IOThreads++
			ioSum += tb.Busy
			pw.IOBusyMax = max(pw.IOBusyMax, tb.Busy)
		}
	}
	if pw.IOThreads > 0 {
		pw.IOBusyMean = ioSum / float64(pw.IOThreads)
	}
	sort.Slice(pw.Threads, func(i, j int) bool { return pw.Threads[i].TID < pw.Threads[j].TID })
	return pw
}

// ServerCPUSeconds is the server's CPU time over the window, all its
// threads (a cluster's: every node's) together; ok is false without
// server thread metrics.
func (w *Window) ServerCPUSeconds() (sec float64, ok bool) {
	if w == nil || w.Server == nil || w.Seconds <= 0 {
		return 0, false
	}
	for _, p := range w.Processes() {
		for _, t := range p.Threads {
			sec += t.Busy * w.Seconds
		}
	}
	return sec, true
}

// Processes is the server's processes over the window: Server, then a
// cluster's other nodes; nil without server thread metrics.
func (w *Window) Processes() []*ProcWindow {
	if w == nil || w.Server == nil {
		return nil
	}
	return append([]*ProcWindow{w.Server}, w.Nodes...)
}

// NodeName names a cluster node as the chart and the label do: "node 2
// (pid 4711)"; "" for a server of one process.
func (p *ProcWindow) NodeName() string {
	if p == nil || p.Node == 0 {
		return ""
	}
	return fmt.Sprintf("node %d (pid %d)", p.Node, p.PID)
}

// Busiest is the server process whose busiest thread (main or I/O) was
// the busiest: the one a cluster's limit is judged by (Server when
// there is one process, nil without server thread metrics).
func (w *Window) Busiest() *ProcWindow {
	var out *ProcWindow
	for _, p := range w.Processes() {
		if out == nil || max(p.MainBusy, p.IOBusyMax) > max(out.MainBusy, out.IOBusyMax) {
			out = p
		}
	}
	return out
}
