// Package hostmetrics samples what a host spent during a measured window
// (the server's per-thread CPU by thread name, minor page faults, per-core
// CPU, NIC byte counters) and labels a cell with what most likely ran out.
// Every read goes through a kernel.FS, rooted at a mount point, so tests
// run on fixture trees and production on the real /proc.
package hostmetrics

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/linerate/linerate/infra/kernel"
)

// UserHZ is the kernel's clock tick for /proc CPU times (kernel.UserHZ).
const UserHZ = kernel.UserHZ

// Sampler snapshots the host whose /proc is under Kernel; the zero
// Sampler samples this one.
type Sampler struct{ Kernel kernel.FS }

// ThreadSample is one thread's CPU so far.
type ThreadSample struct {
	TID    int    `json:"tid"`
	Name   string `json:"name"`
	UTicks uint64 `json:"utime_ticks"`
	STicks uint64 `json:"stime_ticks"`
}

// ProcSample is one process at one instant. Node is a cluster node's
// number, 1 the first (0: the server is one process).
type ProcSample struct {
	PID     int            `json:"pid"`
	Node    int            `json:"node,omitempty"`
	MinFlt  uint64         `json:"minflt"`
	Threads []ThreadSample `json:"threads"`
}

// CoreSample is one CPU's jiffies so far.
type CoreSample struct {
	CPU   int    `json:"cpu"`
	Busy  uint64 `json:"busy"`
	Total uint64 `json:"total"`
}

// NICSample is one interface's byte counters so far.
type NICSample struct {
	Name string `json:"name"`
	Rx   uint64 `json:"rx_bytes"`
	Tx   uint64 `json:"tx_bytes"`
}

// Snapshot is everything sampled at one instant. Proc is nil when no PID was
// given (a server in a container on another host reports through its agent).
// Nodes are a cluster's other server processes (server.cluster: N), Proc
// its first.
type Snapshot struct {
	At    time.Time     `json:"at"`
	Proc  *ProcSample   `json:"proc,omitempty"`
	Nodes []*ProcSample `json:"nodes,omitempty"`
	Cores []CoreSample  `json:"cores"`
	NICs  []NICSample   `json:"nics"`
}

// Snapshot samples pid (0: no process) and a cluster's other nodes (node
// 2, 3, … in order), all cores and all NICs. A node that is gone is left
// out: the cell fails on its exit, and the rest stays sampled.
func (s Sampler) Snapshot(pid int, nodes ...int) (*Snapshot, error) {
	snap := &Snapshot{At: time.Now()}
	var err error
	if pid > 0 {
		if snap.Proc, err = s.Process(pid); err != nil {
			return nil, err
		}
		if len(nodes) > 0 {
			snap.Proc.Node = 1
		}
	}
	for i, n := range nodes {
		p, err := s.Process(n)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cluster node %d: %w", i+2, err)
		}
		p.Node = i + 2
		snap.Nodes = append(snap.Nodes, p)
	}
	if snap.Cores, err = s.Cores(); err != nil {
		return nil, err
	}
	// The server's own view of the network: in another namespace (the
	// netns provider) its veth is there and not in ours.
	var devs []kernel.NetDev
	err = fs.ErrNotExist
	if pid > 0 {
		devs, err = s.Kernel.ProcNetDev(pid)
	}
	if errors.Is(err, fs.ErrNotExist) {
		devs, err = s.Kernel.NetDev()
	}
	if err != nil {
		return nil, err
	}
	snap.NICs = make([]NICSample, len(devs))
	for i, d := range devs {
		snap.NICs[i] = NICSample{Name: d.Name, Rx: d.RxBytes, Tx: d.TxBytes}
	}
	return snap, nil
}

// Process samples pid's minor faults and every thread's CPU, by TID.
func (s Sampler) Process(pid int) (*ProcSample, error) {
	st, err := s.Kernel.ProcStat(pid)
	if err != nil {
		return nil, err
	}
	threads, err := s.Kernel.Threads(pid)
	if err != nil {
		return nil, err
	}
	p := &ProcSample{PID: pid, MinFlt: st.MinFlt, Threads: make([]ThreadSample, len(threads))}
	for i, t := range threads {
		p.Threads[i] = ThreadSample{TID: t.TID, Name: t.Name, UTicks: t.UTime, STicks: t.STime}
	}
	return p, nil
}

// Cores samples every CPU's busy and total ticks.
func (s Sampler) Cores() ([]CoreSample, error) {
	times, err := s.Kernel.CPUTimes()
	if err != nil {
		return nil, err
	}
	out := make([]CoreSample, len(times))
	for i, c := range times {
		out[i] = CoreSample{CPU: c.CPU, Busy: c.Busy(), Total: c.Total()}
	}
	return out, nil
}
