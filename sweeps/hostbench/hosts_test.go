package hostbench

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/netns"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/labtest"
)

// Two client hosts on this machine against one redis-server: a GET cell
// is prefilled once, from the first host, then both run their share of
// the connections from one scheduled start; a host whose bench gives no
// record fails the cell, named.
func TestHostsBencher(t *testing.T) {
	t.Parallel()
	srv := labtest.StartRedis(t)
	lr := labtest.Binary(t)
	lo := netip.MustParseAddr("127.0.0.1")
	host := func(label, bin string) infra.Host { return &netns.Host{Label: label, Addr: lo, Binary: bin} }
	w := lab.Workload{Host: "127.0.0.1", Port: srv.Port, Connections: 3, Threads: 2, Keyspace: 4, ValueSz: lab.OneSize(64 << 10),
		Ratio: lab.Ratio{Gets: 1}, Prefill: true, Warmup: lab.Duration(100 * time.Millisecond), Duration: lab.Duration(time.Second)}.Resolve()
	b := HostsBencher{Hosts: []infra.Host{host("client", lr), host("client-2", lr)}, Lead: time.Second}
	res, recs, err := b.BenchHosts(context.Background(), w, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Result.Workload.Connections != 2 || recs[1].Result.Workload.Connections != 1 ||
		recs[1].Result.Workload.Threads != 1 || recs[0].Result.Workload.Seed == recs[1].Result.Workload.Seed {
		t.Fatalf("shares: %+v / %+v", recs[0].Result.Workload, recs[1].Result.Workload)
	}
	for _, r := range recs {
		if r.Result.Workload.Prefill || r.Result.Phases[lab.PhasePrefill] != nil {
			t.Errorf("%s prefilled: the first host does it once, before the window", r.Host)
		}
	}
	g := res.Ops[lab.OpGet]
	if g == nil || g.Ops != recs[0].Result.Ops[lab.OpGet].Ops+recs[1].Result.Ops[lab.OpGet].Ops || g.Misses != 0 {
		t.Fatalf("merged GETs %+v", g)
	}
	if p := res.Phases[lab.PhasePrefill]; p == nil || p.Ops[lab.OpSet] < 4 || res.Server.DBSizeAfterPrefill == nil || *res.Server.DBSizeAfterPrefill != 4 {
		t.Errorf("merged prefill phase %+v, server %+v", p, res.Server)
	}
	if res.Workload.Connections != 3 || res.Workload.Threads != 3 || !res.Workload.Prefill || res.Stop.Reason != lab.StopCompleted {
		t.Errorf("merged workload %+v, stop %+v", res.Workload, res.Stop)
	}

	// The second host's "bench" dies 2 s in, without a record, while the
	// first is in its 5 s window: the first is stopped (it gives no record
	// of a window it would have finished), and the cell fails naming the
	// second.
	w.Prefill = false
	w.Duration = lab.Duration(5 * time.Second)
	dies := filepath.Join(t.TempDir(), "dies")
	if err := os.WriteFile(dies, []byte("#!/bin/sh\nsleep 2\necho 'killed by the test' >&2\nexit 137\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	b.Hosts[1] = host("client-2", dies)
	res, recs, err = b.BenchHosts(context.Background(), w, nil)
	if err == nil || res != nil || !strings.Contains(err.Error(), "client-2 (127.0.0.1)") {
		t.Fatalf("a host with no record: %v, %v", res, err)
	}
	// The host that failed is named; the other was stopped because of it,
	// not left to run out its window.
	if len(recs) != 2 || !strings.Contains(recs[1].Error, "killed by the test") || !strings.Contains(recs[0].Error, "stopped: client-2 (127.0.0.1) gave no record") ||
		strings.Contains(err.Error(), "client (127.0.0.1)") {
		t.Errorf("records: %+v; error %v", recs, err)
	}

}
