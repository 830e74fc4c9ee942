package sweeps

import (
	"context"
	"fmt"
	"sort"

	"github.com/linerate/linerate/infra/nicstats"
	"github.com/linerate/linerate/lab"
)

// ClientRecord is one client host's own record of a cell whose load came
// from several (clients: N); the cell's Result is their merge (lab.Merge).
type ClientRecord struct {
	Host   string      `json:"host"` // client, client-2 … with its address
	Result *lab.Result `json:"result,omitempty"`
	// Error is why this host gave no record, or how its bench failed.
	Error string `json:"error,omitempty"`
}

// HostsBencher is a Bencher whose load comes from several client hosts at
// once: it returns the merged record and each host's own. A host that
// fails fails the cell, the error naming it.
type HostsBencher interface {
	Bencher
	BenchHosts(ctx context.Context, w lab.Workload, mark func(lab.Phase)) (*lab.Result, []ClientRecord, error)
}

// NICSource is one host's data-plane interface, read for its driver
// counters at the edges of each cell's window (NIC reads one in
// this process, from inside a network namespace where it is one;
// sweeps/agent through a host's agent).
type NICSource interface {
	// NIC names the host and its interface.
	NIC(ctx context.Context) (NICInfo, error)
	// Counters reads the interface's driver statistics (the watched ones
	// at least: nicstats.Watched).
	Counters(ctx context.Context) (nicstats.Counters, error)
}

// NICInfo is what a NICSource reads from.
type NICInfo struct {
	Host      string `json:"host"` // server, client, client-2 …
	Interface string `json:"interface"`
	Driver    string `json:"driver,omitempty"`
	MTU       int    `json:"mtu,omitempty"`
}

// NICDelta is one host's interface over a cell's measured window: the rise
// of every driver counter that counts trouble (nicstats.Watched: allowance
// exceeded, drops, discards, errors, timeouts).
type NICDelta struct {
	NICInfo
	nicstats.Deltas
	// Error is why the counters could not be read at both edges.
	Error string `json:"error,omitempty"`
}

// Allowances lists, for the limit label and the report, every allowance
// counter that rose in the window, with its host and rise:
// "server ens5 bw_out_allowance_exceeded +1843".
func Allowances(ds []NICDelta) []string {
	var out []string
	for _, d := range ds {
		for _, name := range nicstats.Allowance(d.Deltas) {
			out = append(out, fmt.Sprintf("%s %s %s +%d", d.Host, d.Interface, name, d.Counters[name]))
		}
	}
	sort.Strings(out)
	return out
}

// Shaped is a cell during which a NIC counted an allowance exceeded, for
// the run's summary.
type Shaped struct {
	CellID   string `json:"cell_id"`
	Counters string `json:"counters"`
}
