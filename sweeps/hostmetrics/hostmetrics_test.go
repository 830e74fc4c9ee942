package hostmetrics

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/infra/kernel"
	"github.com/linerate/linerate/lab"
)

// statLine renders a /proc stat line with the fields this package reads.
func statLine(pid int, comm string, minflt, utime, stime uint64) string {
	// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
	return fmt.Sprintf("%d (%s) S 1 1 1 0 -1 4194560 %d 0 0 0 %d %d 0 0 20 0 3 0 100 1000 200\n", pid, comm, minflt, utime, stime)
}

type thread struct {
	tid          int
	name         string
	utime, stime uint64
}

// fixture writes a /proc tree under root for one process and the host.
func fixture(t *testing.T, root string, pid int, minflt uint64, threads []thread, cpu [][2]uint64, lo [2]uint64) {
	t.Helper()
	w := func(p, s string) {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var ut, st uint64
	for _, th := range threads {
		ut += th.utime
		st += th.stime
		w(fmt.Sprintf("proc/%d/task/%d/stat", pid, th.tid), statLine(th.tid, th.name, 0, th.utime, th.stime))
		w(fmt.Sprintf("proc/%d/task/%d/comm", pid, th.tid), th.name+"\n")
	}
	w(fmt.Sprintf("proc/%d/stat", pid), statLine(pid, "valkey-server", minflt, ut, st))
	var ps strings.Builder
	ps.WriteString("cpu  1 2 3 4 5 6 7 8 0 0\n")
	for i, c := range cpu { // busy, idle
		fmt.Fprintf(&ps, "cpu%d %d 0 0 %d 0 0 0 0 0 0\n", i, c[0], c[1])
	}
	ps.WriteString("intr 1 2 3\n")
	w("proc/stat", ps.String())
	w("proc/net/dev", "Inter-|   Receive                                                |  Transmit\n"+
		" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n"+
		fmt.Sprintf("    lo: %d 10 0 0 0 0 0 0 %d 10 0 0 0 0 0 0\n", lo[0], lo[1])+
		"  eth0: 5 1 0 0 0 0 0 0 5 1 0 0 0 0 0 0\n")
}

func TestSnapshotDiffOnFixtures(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	// A server with a main thread, two I/O threads, a background thread,
	// and an I/O thread that starts inside the window.
	fixture(t, a, 4242, 1000, []thread{{4242, "valkey-server", 100, 50}, {4243, "io_thd_1", 10, 10}, {4244, "io_thd_2", 5, 5}, {4245, "bio_lazy_free", 0, 0}},
		[][2]uint64{{100, 900}, {200, 800}}, [2]uint64{1000, 2000})
	fixture(t, b, 4242, 51000, []thread{{4242, "valkey-server", 270, 80}, {4243, "io_thd_1", 60, 60}, {4244, "io_thd_2", 25, 25}, {4245, "bio_lazy_free", 0, 1}, {4246, "io_thd_3", 10, 0}},
		[][2]uint64{{250, 950}, {210, 990}}, [2]uint64{1000 + 250e6, 2000 + 250e6})
	sa, err := Sampler{Kernel: kernel.FS{Root: a}}.Snapshot(4242)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := Sampler{Kernel: kernel.FS{Root: b}}.Snapshot(4242)
	if err != nil {
		t.Fatal(err)
	}
	sa.At = time.Unix(100, 0)
	sb.At = time.Unix(102, 0) // a 2 s window: 200 ticks per fully busy thread
	w := Diff(sa, sb)
	p := w.Server
	if p == nil || p.MainBusy != 1.0 || p.IOThreads != 3 || p.IOBusyMax != 0.5 || p.MinorFaults != 50000 {
		t.Fatalf("server window %+v", p)
	}
	if want := (0.5 + 0.2 + 0.05) / 3; p.IOBusyMean < want-1e-9 || p.IOBusyMean > want+1e-9 {
		t.Errorf("io mean %g, want %g", p.IOBusyMean, want)
	}
	if len(w.Cores) != 2 || w.Cores[0].Busy != 0.75 || w.Cores[1].Busy != 10.0/200 {
		t.Errorf("cores %+v", w.Cores)
	}
	if len(w.NICs) != 1 || w.NICs[0].Name != "lo" || w.NICs[0].RxGbps != 1.0 || w.NICs[0].TxBytes != 250e6 {
		t.Errorf("nics %+v", w.NICs)
	}
}

// A cluster's nodes are sampled as processes of their own: each node's
// main thread is its own, a node missing from the first snapshot is left
// out, and the server's CPU seconds are every node's.
func TestSnapshotDiffOfClusterNodes(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	cpu := [][2]uint64{{0, 100}}
	for _, n := range []struct {
		pid             int
		before, after   uint64 // main thread ticks
		faults, faults2 uint64
	}{{100, 10, 30, 5, 7}, {200, 0, 190, 0, 40}, {300, 50, 50, 1, 1}} {
		fixture(t, a, n.pid, n.faults, []thread{{n.pid, "valkey-server", n.before, 0}}, cpu, [2]uint64{})
		fixture(t, b, n.pid, n.faults2, []thread{{n.pid, "valkey-server", n.after, 0}}, cpu, [2]uint64{})
	}
	sa, err := Sampler{Kernel: kernel.FS{Root: a}}.Snapshot(100, 200, 300)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := Sampler{Kernel: kernel.FS{Root: b}}.Snapshot(100, 200, 300)
	if err != nil {
		t.Fatal(err)
	}
	// A node that is gone (it died mid-cell) is left out; the rest of
	// the host is still sampled.
	if gone, err := (Sampler{Kernel: kernel.FS{Root: a}}).Snapshot(100, 999, 300); err != nil || gone.Proc == nil || len(gone.Nodes) != 1 ||
		gone.Nodes[0].PID != 300 || gone.Nodes[0].Node != 3 || len(gone.Cores) != 1 {
		t.Errorf("a snapshot beside a node that is gone: %+v, %v; want the first node, node 3 and the cores", gone, err)
	}
	sa.At, sb.At = time.Unix(100, 0), time.Unix(102, 0) // 200 ticks a busy thread
	sa.Nodes = sa.Nodes[:1]                             // node 300 started inside the window
	w := Diff(sa, sb)
	if w.Server == nil || w.Server.PID != 100 || w.Server.Node != 1 || w.Server.MainBusy != 0.1 {
		t.Fatalf("first node %+v", w.Server)
	}
	if len(w.Nodes) != 1 || w.Nodes[0].PID != 200 || w.Nodes[0].Node != 2 || w.Nodes[0].MainBusy != 0.95 || w.Nodes[0].MinorFaults != 40 {
		t.Fatalf("other nodes %+v, want node 2 (pid 200) alone at 95%%", w.Nodes)
	}
	if p := w.Busiest(); p == nil || p.NodeName() != "node 2 (pid 200)" {
		t.Errorf("busiest %+v, want node 2 (pid 200)", p)
	}
	if sec, ok := w.ServerCPUSeconds(); !ok || sec < 2.1-1e-9 || sec > 2.1+1e-9 {
		t.Errorf("server CPU %g s (%v), want 0.2 + 1.9", sec, ok)
	}
}

// The real /proc: a real redis-server's threads by name, main thread vs
// io_thd_*, and our own minor faults growing as we touch fresh memory.
func TestRealProc(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-server missing on CI (.ci/setup installs it): %v", err)
		}
		t.Skip("redis-server not installed; .ci/setup installs it")
	}
	sock := filepath.Join(t.TempDir(), "r.sock")
	cmd := exec.Command(bin, "--port", "0", "--unixsocket", sock, "--io-threads", "2", "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	fs := Sampler{}
	var snap *ProcSample
	for i := 0; i < 50; i++ { // io threads start just after the main thread
		snap, err = fs.Process(cmd.Process.Pid)
		if err == nil && countIO(snap) > 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if countIO(snap) != 1 {
		t.Errorf("io threads in %+v, want io_thd_1", snap.Threads)
	}
	if snap.Threads[0].TID != cmd.Process.Pid || !strings.HasPrefix(snap.Threads[0].Name, "redis-server") {
		t.Errorf("main thread %+v", snap.Threads[0])
	}

	self := os.Getpid()
	a, err := fs.Snapshot(self)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	b, err := fs.Snapshot(self)
	if err != nil {
		t.Fatal(err)
	}
	w := Diff(a, b)
	if w.Server.MinorFaults < 1000 { // 16384 pages touched, fewer with huge pages
		t.Errorf("minor faults %d after touching 64 MiB", w.Server.MinorFaults)
	}
	if len(w.Cores) == 0 {
		t.Error("no cores")
	}
	_ = buf[len(buf)-1]
}

func countIO(p *ProcSample) int {
	n := 0
	for _, th := range p.Threads {
		if IsIOThread(th.Name) {
			n++
		}
	}
	return n
}

func TestLabel(t *testing.T) {
	res := func(mut func(*lab.Result)) *lab.Result {
		r := &lab.Result{Window: lab.Window{Measured: lab.Duration(10 * time.Second)},
			Ops: map[lab.Op]*lab.OpResult{lab.OpGet: {Ops: 1000, WireRecvd: 100e9 / 8 * 10 * 0.5}}}
		r.Client.MaxWorkerBusy = 0.5
		if mut != nil {
			mut(r)
		}
		return r
	}
	win := func(main, io float64, faults uint64) *Window {
		return &Window{Seconds: 10, Server: &ProcWindow{MainBusy: main, IOThreads: 2, IOBusyMax: io, MinorFaults: faults}}
	}
	for _, tc := range []struct {
		name   string
		in     LimitInput
		want   LimitKind
		client bool
	}{
		{"client worker saturated", LimitInput{Result: res(func(r *lab.Result) { r.Client.MaxWorkerBusy = 0.97 }), Server: win(1, 1, 0)}, LimitClient, true},
		{"client note", LimitInput{Result: res(func(r *lab.Result) { r.Notes = []string{"client-limited: worker 3 at 98% CPU"} }), Server: win(0.2, 0.2, 0)}, LimitClient, true},
		{"link full", LimitInput{Result: res(nil), Server: win(0.5, 0.5, 0), LinkGbps: 50}, LimitLink, false},
		{"link not full", LimitInput{Result: res(nil), Server: win(0.95, 0.5, 0), LinkGbps: 100}, LimitServerMain, false},
		// 50 Gbps server to client: within 5% of a 52 Gbps calibration, not of 55.
		{"calibrated ceiling reached", LimitInput{Result: res(nil), Server: win(0.95, 0.5, 0), CalibratedDown: 52}, LimitLink, false},
		{"calibrated ceiling not reached", LimitInput{Result: res(nil), Server: win(0.95, 0.5, 0), CalibratedDown: 55}, LimitServerMain, false},
		{"other direction's ceiling", LimitInput{Result: res(nil), Server: win(0.95, 0.5, 0), CalibratedUp: 50}, LimitServerMain, false},
		{"allowance exceeded", LimitInput{Result: res(nil), Server: win(0.95, 0.5, 0), CalibratedDown: 50,
			Allowance: []string{"server ens5 bw_out_allowance_exceeded +12"}}, LimitLinkAllowance, false},
		{"client before allowance", LimitInput{Result: res(func(r *lab.Result) { r.Client.MaxWorkerBusy = 0.97 }),
			Allowance: []string{"server ens5 pps_allowance_exceeded +1"}}, LimitClient, true},
		// 1e6 faults in 10 s at 13 µs = 1.3 CPUs of faulting: the faults are the cost.
		{"page faults", LimitInput{Result: res(nil), Server: win(0.99, 0.4, 1e6), FaultCost: 13 * time.Microsecond}, LimitPageFaults, false},
		{"few faults", LimitInput{Result: res(nil), Server: win(0.99, 0.4, 1e4), FaultCost: 13 * time.Microsecond}, LimitServerMain, false},
		{"io threads", LimitInput{Result: res(nil), Server: win(0.6, 0.95, 0)}, LimitServerIO, false},
		{"nothing saturated", LimitInput{Result: res(nil), Server: win(0.6, 0.5, 0)}, LimitUnclear, false},
		{"cores full, no thread saturated", LimitInput{Result: res(nil), Server: func() *Window {
			w := win(0.55, 0, 0)
			w.Cores = []CoreBusy{{0, 0.99}, {1, 0.97}}
			return w
		}()}, LimitHostCPU, false},
		{"cores half busy", LimitInput{Result: res(nil), Server: func() *Window {
			w := win(0.55, 0, 0)
			w.Cores = []CoreBusy{{0, 0.99}, {1, 0.2}}
			return w
		}()}, LimitUnclear, false},
		// A cluster is judged by its busiest node, whichever it is.
		{"cluster node main saturated", LimitInput{Result: res(nil), Server: func() *Window {
			w := win(0.3, 0.2, 0)
			w.Server.Node = 1
			w.Nodes = []*ProcWindow{{PID: 7, Node: 2, MainBusy: 0.97}, {PID: 8, Node: 3, MainBusy: 0.4}}
			return w
		}()}, LimitServerMain, false},
		{"cluster, no node saturated", LimitInput{Result: res(nil), Server: func() *Window {
			w := win(0.3, 0.2, 0)
			w.Server.PID, w.Server.Node = 6, 1
			w.Nodes = []*ProcWindow{{PID: 7, Node: 2, MainBusy: 0.6}}
			return w
		}()}, LimitUnclear, false},
		{"no metrics", LimitInput{Result: res(nil)}, LimitUnclear, false},
		{"no result", LimitInput{}, LimitUnclear, false},
	} {
		got := Label(tc.in)
		if got.Kind != tc.want || got.ClientLimited != tc.client || got.Detail == "" {
			t.Errorf("%s: %+v, want %s client=%v", tc.name, got, tc.want, tc.client)
		}
		// A cluster's label names the node it judged.
		if len(tc.in.Server.nodes()) > 0 && got.Kind != LimitClient && !strings.Contains(got.Detail, fmt.Sprintf("; %s, the busiest of %d sampled", tc.in.Server.Busiest().NodeName(), len(tc.in.Server.Nodes)+1)) {
			t.Errorf("%s: %q does not name the busiest node", tc.name, got.Detail)
		}
		// The label names the counter that rose.
		if got.Kind == LimitLinkAllowance && !strings.Contains(got.Detail, tc.in.Allowance[0]) {
			t.Errorf("%s: %q does not name %s", tc.name, got.Detail, tc.in.Allowance[0])
		}
	}
}

// The real kernel: first touches of fresh pages cost something, and less
// than a millisecond each.
func TestMeasureFaultCost(t *testing.T) {
	c, err := MeasureFaultCost(8 << 20)
	if err != nil {
		t.Fatal(err)
	}
	if c <= 0 || c > time.Millisecond {
		t.Errorf("fault cost %s", c)
	}
	t.Logf("minor fault cost here: %s", c)
}

// nodes is w's cluster nodes besides Server; nil for a nil window.
func (w *Window) nodes() []*ProcWindow {
	if w == nil {
		return nil
	}
	return w.Nodes
}
