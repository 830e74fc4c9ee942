package session

import (
	"context"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/netns"
	"github.com/linerate/linerate/infra/sshhost"
	"github.com/linerate/linerate/infra/sshhost/sshtest"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/control"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/sweeps"
)

// infoServers wraps a starter so the test reads each server's INFO stats
// at every flush (just before each cell) and at its stop (after the last):
// the server's own count of the bytes of each cell.
type infoServers struct {
	sweeps.ServerStarter
	ns    string
	mu    sync.Mutex
	marks []map[string]string // in time order
}

func (s *infoServers) Start(ctx context.Context, pv sweeps.PlanVersion, logDir string) (sweeps.RunningServer, error) {
	srv, err := s.ServerStarter.Start(ctx, pv, logDir)
	if err != nil {
		return nil, err
	}
	return &infoServer{RunningServer: srv, s: s}, nil
}

type infoServer struct {
	sweeps.RunningServer
	s *infoServers
}

func (r *infoServer) mark(ctx context.Context) error {
	host, port := r.Addr()
	h := &netns.Host{Namespace: r.s.ns}
	c, err := control.DialVia(ctx, lab.Workload{Host: host, Port: port}, h.DialContext)
	if err != nil {
		return err
	}
	defer c.Close()
	info, err := c.Info(ctx, "stats")
	if err != nil {
		return err
	}
	r.s.mu.Lock()
	r.s.marks = append(r.s.marks, info)
	r.s.mu.Unlock()
	return nil
}

func (r *infoServer) FlushAll(ctx context.Context) error {
	if err := r.RunningServer.FlushAll(ctx); err != nil {
		return err
	}
	return r.mark(ctx)
}

func (r *infoServer) Stop(ctx context.Context) error {
	if err := r.mark(ctx); err != nil {
		return err
	}
	return r.RunningServer.Stop(ctx)
}

// Two client hosts run each cell of a netns campaign together. The cell
// record holds both hosts' records and their merge: ops summed, the p99
// the merged histogram's (never a mix of the hosts' p99s), and the wire
// bytes of both hosts together what the server counted. The link is
// calibrated from both hosts, and each host's veth is read.
func TestTwoClientsOnNetns(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("network namespaces need root; CI runs as root")
		}
		t.Skip("network namespaces need root")
	}
	bin := redisBinary(t)
	lr := labtest.Binary(t)
	src := `name: two-clients
provider: {kind: netns, binary: ` + lr + `}
clients: 2
calibrate: {duration: ` + cellWindow + `, warmup: 0s}
versions:
  - {binary: ` + bin + `, label: redis, io-threads: 1}
server:
  maxmemory: 256mb
workload:
  ratio: [GET, SET]
  value-size: [256KiB, 1MiB]
  connections: 4
  threads: 1
  keyspace: 4
  rate: 100
  warmup: 100ms
  duration: ` + cellWindow + `
`
	c := parse(t, "two-clients.yaml", src)
	var wrap *infoServers
	s := open(t, c, t.TempDir(), Options{Servers: func(st sweeps.ServerStarter) sweeps.ServerStarter {
		wrap = &infoServers{ServerStarter: st}
		return wrap
	}})
	srvNS, cliNS := netnsPair(t, s)
	wrap.ns = srvNS
	// The calibration's closed-loop windows through a shaped link (the
	// second client's namespace is the first's named -cli2).
	sshtest.Shape(t, srvNS, cliNS, cliNS+"2")
	run := runAll(t, s)
	recs := run.Sorted()
	if len(recs) != 4 || len(wrap.marks) != 5 {
		t.Fatalf("%d cells, %d INFO reads; want 4 cells and a read before each and after the last", len(recs), len(wrap.marks))
	}
	stat := func(i int, k string) uint64 {
		v, err := strconv.ParseUint(wrap.marks[i][k], 10, 64)
		if err != nil {
			t.Fatalf("INFO %s: %q", k, wrap.marks[i][k])
		}
		return v
	}
	// Cells ran in plan order, one server for the block.
	for i, rec := range recs {
		if len(rec.Clients) != 2 || !strings.HasPrefix(rec.Clients[0].Host, "client (198.18.0.2)") || !strings.HasPrefix(rec.Clients[1].Host, "client-2 (198.18.0.6)") {
			t.Fatalf("%s: client records %+v", rec.CellID, rec.Clients)
		}
		// The merged window is the intersection of the hosts' windows.
		// How close together they opened is the machine's to say (a
		// process make test froze for 0.6 s opened its window that much
		// later); that both hosts were given one moment is
		// TestHostsBencherStartsEveryHostAtOneMomentOnItsClock's
		// (sweeps/hostbench), on fake clocks.
		a, b := rec.Clients[0].Result.Window, rec.Clients[1].Result.Window
		if a.Start == nil || b.Start == nil {
			t.Errorf("%s: the hosts' windows opened at %v and %v", rec.CellID, a.Start, b.Start)
		} else if m := rec.Result.Window; m.Start == nil || !m.Start.Equal(latest(*a.Start, *b.Start)) || m.Measured > a.Measured || m.Measured > b.Measured {
			t.Errorf("%s: merged window %v for %v, the hosts' %v for %v and %v for %v", rec.CellID, m.Start, m.Measured, a.Start, a.Measured, b.Start, b.Measured)
		}
		for op, m := range rec.Result.Ops {
			var sum uint64
			all := lab.NewHistogram()
			for _, cr := range rec.Clients {
				o := cr.Result.Ops[op]
				sum += o.Ops
				h, err := lab.DecodeHistogram(o.Latency)
				if err != nil {
					t.Fatal(err)
				}
				// Every latency either host recorded, put in one histogram
				// value by value.
				for _, bar := range h.Distribution() {
					if bar.Count > 0 {
						all.RecordValues(bar.From, bar.Count)
					}
				}
				if cr.Result.Workload.Connections != 2 {
					t.Errorf("%s: %s ran %d connections, want its half of 4", rec.CellID, cr.Host, cr.Result.Workload.Connections)
				}
			}
			if m.Ops != sum || m.Ops == 0 {
				t.Errorf("%s %s: merged %d ops, the hosts' sum %d", rec.CellID, op, m.Ops, sum)
			}
			if want := float64(all.ValueAtQuantile(99)); m.Latency.P99 != want {
				t.Errorf("%s %s: merged p99 %v µs, the p99 of both hosts' latencies %v µs", rec.CellID, op, m.Latency.P99, want)
			}
		}
		// What both hosts (and, for GETs, the prefill before them) sent and
		// received is what the server counted.
		var sent, recvd uint64
		for _, p := range rec.Result.Phases {
			sent += p.WireSent
			recvd += p.WireRecvd
		}
		in, out := stat(i+1, "total_net_input_bytes")-stat(i, "total_net_input_bytes"), stat(i+1, "total_net_output_bytes")-stat(i, "total_net_output_bytes")
		t.Logf("%s: clients sent %d, server read %d; clients received %d, server wrote %d", rec.CellID, sent, in, recvd, out)
		// Within 1% in all; each direction within 1% or the control
		// plane's few kilobytes (the benches' INFO and CONFIG GET, this
		// test's INFO, FLUSHALL), which no record counts: a SET cell's
		// replies are 5 bytes each.
		if tot, its := sent+recvd, in+out; math.Abs(float64(tot)-float64(its)) > 0.01*float64(its) {
			t.Errorf("%s: wire bytes: clients %d, server %d: more than 1%% apart", rec.CellID, tot, its)
		}
		for _, d := range []struct {
			what      string
			ours, its uint64
		}{{"sent/read", sent, in}, {"received/written", recvd, out}} {
			if diff := math.Abs(float64(d.ours) - float64(d.its)); diff > 0.01*float64(d.its) && diff > 32<<10 {
				t.Errorf("%s: wire bytes %s: clients %d, server %d: more than 1%% and 32 KiB apart", rec.CellID, d.what, d.ours, d.its)
			}
		}
		checkNICDeltas(t, rec, "server lr-srv", "server lr-s2", "client lr-cli", "client-2 lr-cli")
	}
	checkLink(t, run.Env, "server lr-srv veth", "server lr-s2 veth", "client lr-cli veth", "client-2 lr-cli veth")
	if run.Env.Link.Clients != 2 || run.Env.Link.Connections != 4 {
		t.Errorf("link calibrated with %d clients and %d connections, want 2 and 4", run.Env.Link.Clients, run.Env.Link.Connections)
	}
	if len(run.Env.Hosts) != 3 {
		t.Errorf("hosts %+v, want the server and two clients", run.Env.Hosts)
	}
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Two client hosts of an ssh pair run each cell together: an agent on
// each (sshds in namespaces), their clocks measured, one start moment
// moved onto each. The cell record is the merge of both hosts' records,
// each kept and named by its host, and the link is calibrated from both.
func TestTwoClientsOnSSHPair(t *testing.T) {
	t.Parallel()
	bin := redisBinary(t)
	l := sshtest.NewClients(t, "e2e-ssh-2cli", 2)
	hosts := l.Pair.ClientHosts()
	if len(hosts) != 2 {
		t.Fatalf("the lab has %d client hosts, want 2", len(hosts))
	}
	src := `name: e2e-ssh-2cli
provider: {kind: ssh, server: root@198.18.0.1:2222, clients: [root@198.18.0.2:2222, root@198.18.0.6:2222], key: /nonexistent}
clients: 2
calibrate: {duration: 300ms, warmup: 0s}
versions:
  - {binary: ` + bin + `}
server: {maxmemory: 256mb}
workload:
  ratio: [GET, SET]
  value-size: 256KiB
  connections: 4
  threads: 1
  keyspace: 4
  rate: 100
  warmup: 100ms
  duration: ` + cellWindow + `
`
	c := parse(t, "e2e-ssh-2cli.yaml", src)
	// The further host unlabelled: the provider names it by its role.
	prov := &sshhost.Provider{Server: sshConfig(t, l, l.Pair.Server, "server", ""), Client: sshConfig(t, l, hosts[0], "client", ""),
		More: []sshhost.Config{sshConfig(t, l, hosts[1], "", "")}}
	s := open(t, c, t.TempDir(), Options{Provider: prov})
	run := runAll(t, s)
	recs := run.Sorted()
	if len(recs) != 2 {
		t.Fatalf("%d cells, want GET and SET", len(recs))
	}
	for _, rec := range recs {
		res := rec.Result
		if res == nil || res.Stop.Reason != lab.StopCompleted || len(res.Errors) != 0 {
			t.Fatalf("%s: merged record %+v", rec.CellID, res)
		}
		if len(rec.Clients) != 2 || rec.Clients[0].Host != "client (198.18.0.2)" || rec.Clients[1].Host != "client-2 (198.18.0.6)" {
			t.Fatalf("%s: client records %+v", rec.CellID, rec.Clients)
		}
		for _, cr := range rec.Clients {
			if cr.Result == nil || cr.Error != "" || cr.Result.Stop.Reason != lab.StopCompleted || cr.Result.Workload.Connections != 2 {
				t.Fatalf("%s: %s: record %+v, error %q; want a completed run of its 2 connections", rec.CellID, cr.Host, cr.Result, cr.Error)
			}
		}
		if res.Workload.Connections != 4 {
			t.Errorf("%s: merged workload has %d connections, want 4", rec.CellID, res.Workload.Connections)
		}
		if len(res.Ops) == 0 {
			t.Errorf("%s: no ops in the merged record", rec.CellID)
		}
		for op, m := range res.Ops {
			var sum uint64
			for _, cr := range rec.Clients {
				o := cr.Result.Ops[op]
				if o.Ops == 0 {
					t.Errorf("%s %s: %s ran no ops", rec.CellID, op, cr.Host)
				}
				sum += o.Ops
			}
			if m.Ops != sum || m.Ops == 0 {
				t.Errorf("%s %s: merged %d ops, the hosts' sum %d", rec.CellID, op, m.Ops, sum)
			}
		}
	}
	if lk := run.Env.Link; lk == nil || lk.Clients != 2 || lk.Connections != 4 {
		t.Errorf("link calibration %+v, want one from 2 clients with 4 connections", lk)
	}
	if len(run.Env.Hosts) != 3 {
		t.Errorf("hosts %+v, want the server and two clients", run.Env.Hosts)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if left := agentsRunning(t, append([]infra.Host{l.Pair.Server}, hosts...)...); len(left) != 0 {
		t.Errorf("agents left after Close: %v", left)
	}
}
