package hostbench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/lab"
)

// clockHost is a client host whose clock is offset from this machine's:
// its "bench" starts nothing, it notes the --start-at it was given and
// writes the record a bench would that opened its 3 s window exactly then,
// stamped with its own clock. Only what HostBencher calls is implemented.
type clockHost struct {
	infra.Host
	name   string
	offset time.Duration // its clock minus this machine's

	mu      sync.Mutex
	startAt time.Time // the --start-at it was given, on its clock
	args    int       // how many --start-at flags
}

func (h *clockHost) Name() string                                   { return h.name }
func (h *clockHost) DataAddr() netip.Addr                           { return netip.Addr{} }
func (h *clockHost) Linerate(context.Context) (string, error)       { return "linerate", nil }
func (h *clockHost) Run(context.Context, ...string) ([]byte, error) { return nil, nil }

func (h *clockHost) Exec(_ context.Context, c infra.Command) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, a := range c.Argv {
		if a == "--start-at" && i+1 < len(c.Argv) {
			ns, err := strconv.ParseInt(c.Argv[i+1], 10, 64)
			if err != nil {
				return fmt.Errorf("--start-at %q: %v", c.Argv[i+1], err)
			}
			h.startAt = time.Unix(0, ns)
			h.args++
		}
	}
	if h.args != 1 {
		return fmt.Errorf("%d --start-at flags in %q", h.args, c.Argv)
	}
	hist := lab.NewHistogram()
	lab.RecordUs(hist, 100_000)
	sum, err := lab.Summarize(hist)
	if err != nil {
		return err
	}
	start := h.startAt
	secs := []lab.SecondSample{{Second: 0, Ops: 1}, {Second: 1, Ops: 1}, {Second: 2, Ops: 1}}
	res := lab.Result{
		Workload: lab.Workload{Connections: 1, Threads: 1},
		Started:  start.Add(-time.Second), Ended: start.Add(4 * time.Second),
		Window: lab.Window{Start: &start, Measured: lab.Duration(3 * time.Second)},
		Ops:    map[lab.Op]*lab.OpResult{lab.OpGet: {Ops: 3, OpsPerSec: 1, Latency: sum, Series: secs}},
		Phases: map[lab.Phase]*lab.PhaseTotals{lab.PhaseMeasure: {Ops: map[lab.Op]uint64{lab.OpGet: 3}}},
		Errors: map[lab.ErrorKind]uint64{},
		Stop:   lab.Stop{Reason: lab.StopCompleted},
	}
	return json.NewEncoder(c.Stdout).Encode(res)
}

// Client hosts whose clocks are off this machine's by measured offsets
// (one ahead, one behind, one nearly right): each is told to start at the
// one scheduled moment moved onto its own clock (the moment plus its
// offset, its clock minus this machine's), and the merge moves their
// records back by the same offsets, so windows that opened together line
// up second by second. A sign slip in either place puts the windows
// seconds apart.
func TestHostsBencherStartsEveryHostAtOneMomentOnItsClock(t *testing.T) {
	offsets := []time.Duration{5 * time.Second, -3 * time.Second, 250 * time.Millisecond}
	hosts := make([]*clockHost, len(offsets))
	ih := make([]infra.Host, len(offsets))
	for i, off := range offsets {
		hosts[i] = &clockHost{name: fmt.Sprintf("client-%d", i+1), offset: off}
		ih[i] = hosts[i]
	}
	const lead = 50 * time.Millisecond
	w := lab.Workload{Host: "198.18.0.1", Port: 6379, Connections: 3, Threads: 3, Keyspace: 4, ValueSz: lab.OneSize(64),
		Ratio: lab.Ratio{Gets: 1}, Duration: lab.Duration(3 * time.Second)}.Resolve()
	before := time.Now()
	res, recs, err := HostsBencher{Hosts: ih, Offsets: offsets, Lead: lead}.BenchHosts(context.Background(), w, nil)
	after := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(hosts) {
		t.Fatalf("%d records for %d hosts", len(recs), len(hosts))
	}
	// The scheduled moment on this machine's clock, read back from each
	// host's --start-at: the same for all, a lead after the call began.
	sched := hosts[0].startAt.Add(-offsets[0])
	if sched.Before(before.Add(lead)) || sched.After(after.Add(lead)) {
		t.Errorf("first host starts at %v on this clock, want %v after the call (%v .. %v)", sched, lead, before, after)
	}
	for i, h := range hosts {
		if want := sched.Add(h.offset); !h.startAt.Equal(want) {
			t.Errorf("%s (clock %+v) told --start-at %v on its clock; the scheduled moment there is %v (off by %v)",
				h.name, h.offset, h.startAt, want, h.startAt.Sub(want))
		}
		if i > 0 && h.startAt.Sub(hosts[0].startAt) != h.offset-offsets[0] {
			t.Errorf("%s's start is %v from the first's, want its clock's %v", h.name, h.startAt.Sub(hosts[0].startAt), h.offset-offsets[0])
		}
	}

	// The merged record is on the first host's clock: the windows, moved
	// by each host's offset against it, coincide, so the intersection is
	// the whole 3 s and every second holds all three hosts' ops.
	if res.Window.Start == nil || !res.Window.Start.Equal(hosts[0].startAt) || res.Window.Measured.D() != 3*time.Second {
		t.Errorf("merged window %v for %v, want %v for 3s (the hosts' windows moved by their offsets)", res.Window.Start, res.Window.Measured, hosts[0].startAt)
	}
	if !res.Started.Equal(hosts[0].startAt.Add(-time.Second)) || !res.Ended.Equal(hosts[0].startAt.Add(4*time.Second)) {
		t.Errorf("merged run %v .. %v, want %v .. %v", res.Started, res.Ended, hosts[0].startAt.Add(-time.Second), hosts[0].startAt.Add(4*time.Second))
	}
	g := res.Ops[lab.OpGet]
	if g == nil || g.Ops != 9 || len(g.Series) != 3 {
		t.Fatalf("merged GETs %+v", g)
	}
	for _, s := range g.Series {
		if s.Ops != 3 {
			t.Errorf("merged second %d has %d ops, want one from each host: %+v", s.Second, s.Ops, g.Series)
		}
	}
}

// Without offsets (one clock: network namespaces) every host is told the
// same --start-at.
func TestHostsBencherOneClock(t *testing.T) {
	hosts := []*clockHost{{name: "client"}, {name: "client-2"}}
	w := lab.Workload{Host: "198.18.0.1", Port: 6379, Connections: 2, Keyspace: 4, ValueSz: lab.OneSize(64),
		Ratio: lab.Ratio{Gets: 1}, Duration: lab.Duration(3 * time.Second)}.Resolve()
	res, _, err := HostsBencher{Hosts: []infra.Host{hosts[0], hosts[1]}, Lead: 10 * time.Millisecond}.BenchHosts(context.Background(), w, nil)
	if err != nil {
		t.Fatal(err)
	}
	if hosts[0].startAt.IsZero() || !hosts[0].startAt.Equal(hosts[1].startAt) {
		t.Errorf("--start-at %v and %v, want one moment", hosts[0].startAt, hosts[1].startAt)
	}
	if res.Window.Measured.D() != 3*time.Second {
		t.Errorf("merged window %v, want 3s", res.Window.Measured)
	}
}
