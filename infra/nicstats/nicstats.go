// Package nicstats reads a network interface's driver counters (what
// `ethtool -S` lists) at the edges of a measuring window and keeps the rise
// of those that count trouble: drops, discards, errors, timeouts and, on
// AWS's ENA, the instance allowances being exceeded. A rise of an allowance
// counter means the cloud shaped the link during the window, so the cell
// measured the allowance, not the server.
package nicstats

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Counters are an interface's driver statistics by name.
type Counters map[string]uint64

// Reader reads the driver statistics of one interface. Ethtool reads the
// kernel's; tests and remote hosts can bring their own.
type Reader interface {
	Read(ctx context.Context, ifname string) (Counters, error)
}

// Watched says whether a counter is kept in a window's deltas: its name
// contains allowance_exceeded, drop, discard or timeout, or an error word
// (in any case). Everything else (packets, bytes, kicks, gauges such as
// ENA's conntrack_allowance_available) says nothing about the link being
// the limit.
//
// "err" is matched per word of the name (words split at anything not a
// letter or digit): a word that starts with err or ends in err, errs, error
// or errors (tx_errors, dma_mapping_err, ierrors, rxerr). A plain substring
// would also catch interrupt and deferred, and ENA's per-queue
// unmask_interrupt rises with every burst of traffic.
func Watched(name string) bool {
	n := strings.ToLower(name)
	for _, part := range [...]string{"allowance_exceeded", "drop", "discard", "timeout"} {
		if strings.Contains(n, part) {
			return true
		}
	}
	words := strings.FieldsFunc(n, func(r rune) bool { return !('a' <= r && r <= 'z' || '0' <= r && r <= '9') })
	for _, w := range words {
		if strings.HasPrefix(w, "err") || strings.HasSuffix(w, "err") || strings.HasSuffix(w, "errs") ||
			strings.HasSuffix(w, "error") || strings.HasSuffix(w, "errors") {
			return true
		}
	}
	return false
}

// KeepWatched is the counters of c that Watched keeps: what an agent
// sends back, a few dozen of ENA's thousand.
func KeepWatched(c Counters) Counters {
	out := Counters{}
	for k, v := range c {
		if Watched(k) {
			out[k] = v
		}
	}
	return out
}

// Deltas is how much each watched counter rose over a window.
type Deltas struct {
	// Counters holds every watched counter the driver has, with its rise;
	// zero means watched and unmoved, absent means the driver has no such
	// counter. A counter that appeared during the window (queues added)
	// counts from zero.
	Counters map[string]uint64 `json:"counters"`
	// Reset names counters that went down: the driver reset them (a device
	// reset, the interface re-created). Their entry in Counters is their
	// value at the end, what they counted since the reset.
	Reset []string `json:"reset,omitempty"`
}

// Delta keeps the watched counters of after with their rise since before.
func Delta(before, after Counters) Deltas {
	d := Deltas{Counters: map[string]uint64{}}
	for name, v := range after {
		if !Watched(name) {
			continue
		}
		was, ok := before[name]
		switch {
		case !ok:
			d.Counters[name] = v
		case v < was:
			d.Counters[name] = v
			d.Reset = append(d.Reset, name)
		default:
			d.Counters[name] = v - was
		}
	}
	slices.Sort(d.Reset)
	return d
}

// Allowance names, sorted, the counters of d whose name contains
// allowance_exceeded and that rose: ENA's bw_in, bw_out, pps, conntrack and
// linklocal allowances. Any at all makes the cell's limit the link's
// allowance.
func Allowance(d Deltas) []string {
	var names []string
	for name, v := range d.Counters {
		if v > 0 && IsAllowance(name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// IsAllowance says a counter counts packets an instance allowance shaped:
// its name contains allowance_exceeded (in any case).
func IsAllowance(name string) bool {
	return strings.Contains(strings.ToLower(name), "allowance_exceeded")
}

// Window samples one interface at the start and the end of a window.
type Window struct {
	r      Reader
	ifname string
	before Counters
}

// Begin reads the counters at the start of a window.
func Begin(ctx context.Context, r Reader, ifname string) (*Window, error) {
	c, err := r.Read(ctx, ifname)
	if err != nil {
		return nil, fmt.Errorf("driver counters of %s at the window's start: %w", ifname, err)
	}
	return &Window{r: r, ifname: ifname, before: c}, nil
}

// End reads them again and returns the watched counters' rise.
func (w *Window) End(ctx context.Context) (Deltas, error) {
	c, err := w.r.Read(ctx, w.ifname)
	if err != nil {
		return Deltas{}, fmt.Errorf("driver counters of %s at the window's end: %w", w.ifname, err)
	}
	return Delta(w.before, c), nil
}
