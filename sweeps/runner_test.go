package sweeps

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/sweeps/hostmetrics"
)

const runSpec = `name: rt
versions:
  - {store: valkey@9.1, label: A}
  - {store: valkey@8.1, label: B}
workload:
  ratio: [GET, SET]
  value-size: [1MiB, 2MiB]
  connections: 2
  threads: 1
  keyspace: 4
  duration: 1s
`

func testPlan(t *testing.T, spec string) *Plan {
	t.Helper()
	c, err := ParseCampaign("rt.yaml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	asTheTableSays(c)
	p, err := NewPlan(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// asTheTableSays stands in for the provider table (sweeps/session), which
// says of the local provider that its hosts share loopback.
func asTheTableSays(c *Campaign) {
	c.Provider.NoLink = c.Provider.Kind == DefaultProvider
}

func newRunner(t *testing.T, dir string, p *Plan, do map[int]string) (*Runner, *fakeStarter, *fakeBench, *bytes.Buffer) {
	t.Helper()
	st, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	fs := &fakeStarter{}
	fb := &fakeBench{starter: fs, do: do}
	var out bytes.Buffer
	r := &Runner{Plan: p, Store: st, Servers: fs, Bench: fb, Progress: NewProgress(&out, false),
		Env: &Environment{Hosts: []HostFacts{LocalHostFacts("/", "both")}}}
	return r, fs, fb, &out
}

func TestRunnerOrderAndRecords(t *testing.T) {
	p := testPlan(t, runSpec)
	dir := t.TempDir()
	r, fs, fb, out := newRunner(t, dir, p, nil)
	sum, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Done != 8 || sum.Ran != 8 || len(sum.Failed) != 0 {
		t.Fatalf("summary %+v\n%s", sum, out)
	}
	want := "start A flush bench 100:0 1MiB flush bench 100:0 2MiB flush bench 0:100 1MiB flush bench 0:100 2MiB stop A " +
		"start B flush bench 100:0 1MiB flush bench 100:0 2MiB flush bench 0:100 1MiB flush bench 0:100 2MiB stop B"
	if got := strings.Join(fs.log, " "); got != want {
		t.Errorf("sequence:\n%s\nwant:\n%s", got, want)
	}
	for _, w := range fb.calls {
		if w.Host != "127.0.0.1" || w.Port != 7000 {
			t.Errorf("bench addressed %s:%d", w.Host, w.Port)
		}
	}
	run, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Cells) != 8 || len(run.Problems) != 0 || run.Env == nil || len(run.Env.Servers) != 2 {
		t.Fatalf("run: %d cells, problems %v, env %+v", len(run.Cells), run.Problems, run.Env)
	}
	rec := run.Cells["A/GET/1MiB/r1"]
	if rec == nil || rec.Status != StatusDone || rec.Attempts != 1 || rec.Result == nil || rec.Limit == nil || rec.Version.Resolved == nil {
		t.Fatalf("record %+v", rec)
	}
	if !strings.Contains(out.String(), "sweep: 8/8 A") && !strings.Contains(out.String(), "sweep: 8/8 B/SET/2MiB/r1") {
		t.Errorf("progress lines:\n%s", out)
	}
}

func TestRunnerFailuresAndResume(t *testing.T) {
	p := testPlan(t, runSpec)
	dir := t.TempDir()
	// Call 1 (A/GET/2MiB): the server crashes mid-cell. Call 3 (A/SET/2MiB):
	// timeouts. Call 5 (B/GET/2MiB): verify failures. Call 6: client-limited.
	// Call 7 (B/SET/2MiB): no request completed in the window.
	r, fs, _, out := newRunner(t, dir, p, map[int]string{1: "crash", 3: "timeouts", 5: "verify", 6: "client", 7: "slow"})
	sum, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Done != 4 || len(sum.Failed) != 4 {
		t.Fatalf("summary %+v\n%s", sum, out)
	}
	reasons := map[string]string{}
	for _, f := range sum.Failed {
		reasons[f.CellID] = f.Reason
	}
	for id, frag := range map[string]string{
		"A/GET/2MiB/r1": "server exited during the cell: signal: killed",
		"A/SET/2MiB/r1": "timeout=3",
		"B/GET/2MiB/r1": "verify: 2 replies failed",
		"B/SET/2MiB/r1": "no request completed inside the 1s window",
	} {
		if !strings.Contains(reasons[id], frag) {
			t.Errorf("%s: reason %q, want %q", id, reasons[id], frag)
		}
	}
	// The crashed server was started again for the next cell of its block.
	if n := strings.Count(strings.Join(fs.log, " "), "start A"); n != 2 {
		t.Errorf("A started %d times, want 2: %v", n, fs.log)
	}
	if len(sum.ClientLimited) != 1 || sum.ClientLimited[0] != "B/SET/1MiB/r1" {
		t.Errorf("client limited %v", sum.ClientLimited)
	}
	text := SummaryText(sum)
	for _, frag := range []string{"failed A/GET/2MiB/r1", "client-limited B/SET/1MiB/r1"} {
		if !strings.Contains(text, frag) {
			t.Errorf("summary lacks %q:\n%s", frag, text)
		}
	}
	r.Store.Close()

	// Resume: only the four failed cells run, as attempt 2.
	r2, _, fb2, _ := newRunner(t, dir, p, map[int]string{0: "crash"})
	sum2, err := r2.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(fb2.calls) != 4 || sum2.Kept != 4 || sum2.Done != 7 {
		t.Fatalf("resume ran %d cells, summary %+v", len(fb2.calls), sum2)
	}
	run, _ := ReadRun(dir)
	rec := run.Cells["A/GET/2MiB/r1"]
	if rec.Attempts != 2 || rec.Status != StatusFailed || len(rec.History) != 1 {
		t.Errorf("retried cell: attempts %d status %s history %v", rec.Attempts, rec.Status, rec.History)
	}
	r2.Store.Close()

	// A third run: attempt 3 fails again, then the cell is given up.
	r3, _, _, _ := newRunner(t, dir, p, map[int]string{0: "crash"})
	r3.MaxAttempts = 3
	if _, err := r3.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	r3.Store.Close()
	r4, _, fb4, _ := newRunner(t, dir, p, nil)
	r4.MaxAttempts = 3
	sum4, _ := r4.Run(context.Background())
	if len(fb4.calls) != 0 || sum4.GivenUp != 1 || len(sum4.Failed) != 1 {
		t.Errorf("after three failures: %d calls, %+v", len(fb4.calls), sum4)
	}
	r4.Store.Close()

	// --redo runs everything again.
	r5, _, fb5, _ := newRunner(t, dir, p, nil)
	r5.Redo = true
	sum5, _ := r5.Run(context.Background())
	if len(fb5.calls) != 8 || sum5.Done != 8 {
		t.Errorf("redo ran %d, %+v", len(fb5.calls), sum5)
	}
}

// A server killed while the bench still connects fails the bench's
// setup (connection refused) before the process's exit is reported: the
// cell still says the server exited, and the next cell of the block gets a
// server started again, not the dead one (seen in make test, where the
// reaping of a killed redis-server came late).
func TestRunnerServerKilledDuringSetup(t *testing.T) {
	p := testPlan(t, runSpec)
	r, fs, _, out := newRunner(t, t.TempDir(), p, map[int]string{1: "killed at setup"})
	sum, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Done != 7 || len(sum.Failed) != 1 || sum.Failed[0].CellID != "A/GET/2MiB/r1" {
		t.Fatalf("summary %+v\n%s", sum, out)
	}
	if reason := sum.Failed[0].Reason; !strings.Contains(reason, "server exited during the cell: signal: killed") {
		t.Errorf("reason %q, want the server's exit", reason)
	}
	if n := strings.Count(strings.Join(fs.log, " "), "start A"); n != 2 {
		t.Errorf("A started %d times, want 2: %v", n, fs.log)
	}
}

func TestRunnerStaleCells(t *testing.T) {
	dir := t.TempDir()
	r, _, _, _ := newRunner(t, dir, testPlan(t, runSpec), nil)
	if _, err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.Store.Close()
	// Same IDs, different duration: the stored cells are for another spec.
	p2 := testPlan(t, strings.Replace(runSpec, "duration: 1s", "duration: 2s", 1))
	r2, _, fb2, _ := newRunner(t, dir, p2, nil)
	sum, _ := r2.Run(context.Background())
	if len(fb2.calls) != 8 || sum.Stale != 8 {
		t.Errorf("stale: ran %d, %+v", len(fb2.calls), sum)
	}
}

func TestRunnerServerStartFails(t *testing.T) {
	dir := t.TempDir()
	r, fs, fb, _ := newRunner(t, dir, testPlan(t, runSpec), nil)
	fs.failFor = map[string]bool{"A": true}
	sum, _ := r.Run(context.Background())
	if sum.Done != 4 || len(sum.Failed) != 4 || len(fb.calls) != 4 {
		t.Fatalf("%+v", sum)
	}
	if !strings.Contains(sum.Failed[0].Reason, "server start: binary not found") {
		t.Errorf("reason %q", sum.Failed[0].Reason)
	}
	if n := strings.Count(strings.Join(fs.log, " "), "start A"); n != 1 {
		t.Errorf("a failing version was started %d times in its block, want 1", n)
	}
}

func TestRunnerInterrupt(t *testing.T) {
	dir := t.TempDir()
	r, _, fb, _ := newRunner(t, dir, testPlan(t, runSpec), nil)
	fb.delay = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(500*time.Millisecond, cancel)
	sum, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Interrupted || sum.Done < 1 || sum.Done > 3 || len(sum.Failed) != 0 {
		t.Errorf("interrupted run: %+v", sum)
	}
	run, _ := ReadRun(dir)
	for id, c := range run.Cells {
		if c.Status != StatusDone {
			t.Errorf("%s recorded as %s after an interrupt", id, c.Status)
		}
	}
}

func TestWindowOf(t *testing.T) {
	base := time.Unix(1000, 0)
	var series []*hostmetrics.Snapshot
	for i := 0; i < 20; i++ { // every 500 ms for 10 s
		series = append(series, &hostmetrics.Snapshot{At: base.Add(time.Duration(i) * 500 * time.Millisecond)})
	}
	res := &lab.Result{Ended: base.Add(9 * time.Second), Window: lab.Window{Measured: lab.Duration(5 * time.Second)}}
	a, b := windowOf(series, res)
	if !a.At.Equal(base.Add(4*time.Second)) || !b.At.Equal(base.Add(9*time.Second)) {
		t.Errorf("window %v-%v", a.At.Sub(base), b.At.Sub(base))
	}
	a, b = windowOf(series, &lab.Result{})
	if a != series[0] || b != series[19] {
		t.Error("no window: want all snapshots")
	}
	if a, _ := windowOf(series[:1], res); a != nil {
		t.Error("one snapshot is no window")
	}
}

// fakeTuning reports one drift on every second check.
type fakeTuning struct{ calls int }

func (f *fakeTuning) Verify(context.Context) (json.RawMessage, int, error) {
	f.calls++
	drifts := f.calls % 2
	return json.RawMessage(fmt.Sprintf(`{"ok":%v}`, drifts == 0)), drifts, nil
}

// The tuning profile is checked before every cell and the check is stored
// with the cell; drift is recorded, not a failure.
func TestRunnerVerifiesTuningPerCell(t *testing.T) {
	p := testPlan(t, runSpec)
	dir := t.TempDir()
	r, _, _, _ := newRunner(t, dir, p, nil)
	ft := &fakeTuning{}
	r.Tuning = ft
	sum, err := r.Run(context.Background())
	if err != nil || sum.Done != 8 {
		t.Fatalf("summary %+v, %v", sum, err)
	}
	if ft.calls != 8 {
		t.Fatalf("tuning verified %d times for 8 cells", ft.calls)
	}
	run, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	drifted := 0
	for _, rec := range run.Cells {
		if rec.Tuning == nil || len(rec.Tuning.Report) == 0 {
			t.Fatalf("%s: no tuning check stored", rec.CellID)
		}
		drifted += rec.Tuning.Drifts
	}
	if drifted != 4 {
		t.Errorf("%d cells recorded drift, want 4", drifted)
	}
}

// clusterStarter starts fake servers of three processes (server.cluster:
// 3): PID 10 and nodes 20 and 30.
type clusterStarter struct{ *fakeStarter }

type fakeCluster struct{ *fakeServer }

func (fakeCluster) PID() int        { return 10 }
func (fakeCluster) NodePIDs() []int { return []int{20, 30} }

func (c clusterStarter) Start(ctx context.Context, v PlanVersion, logDir string) (RunningServer, error) {
	srv, err := c.fakeStarter.Start(ctx, v, logDir)
	if err != nil {
		return nil, err
	}
	return fakeCluster{srv.(*fakeServer)}, nil
}

// countingSampler gives every process asked for more faults and CPU at
// every call.
type countingSampler struct {
	mu    sync.Mutex
	calls uint64
	asked [][]int
}

func (s *countingSampler) Snapshot(pid int, nodes ...int) (*hostmetrics.Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	s.asked = append(s.asked, append([]int{pid}, nodes...))
	proc := func(pid int) *hostmetrics.ProcSample {
		n := s.calls * uint64(pid)
		return &hostmetrics.ProcSample{PID: pid, MinFlt: n, Threads: []hostmetrics.ThreadSample{{TID: pid, Name: "valkey-server", UTicks: n}}}
	}
	snap := &hostmetrics.Snapshot{At: time.Now(), Proc: proc(pid)}
	for _, n := range nodes {
		snap.Nodes = append(snap.Nodes, proc(n))
	}
	return snap, nil
}

// A cluster's every node is sampled, and each node's faults per request
// are its faults over the cell's requests.
func TestRunnerSamplesEveryClusterNode(t *testing.T) {
	p := testPlan(t, runSpec)
	dir := t.TempDir()
	r, fs, _, _ := newRunner(t, dir, p, nil)
	r.Servers = clusterStarter{fs}
	smp := &countingSampler{}
	r.Sampler = smp
	if sum, err := r.Run(context.Background()); err != nil || sum.Done != 8 {
		t.Fatalf("summary %+v, %v", sum, err)
	}
	for _, asked := range smp.asked {
		if len(asked) != 3 || asked[0] != 10 || asked[1] != 20 || asked[2] != 30 {
			t.Fatalf("sampled %v, want the three processes 10, 20, 30", asked)
		}
	}
	run, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range run.Cells {
		procs := rec.Host.Processes()
		if len(procs) != 3 {
			t.Fatalf("%s: %d processes in the record, want 3", rec.CellID, len(procs))
		}
		for _, p := range procs {
			if p.MinorFaults == 0 || p.MinorFaultsPerOp != float64(p.MinorFaults)/100 {
				t.Errorf("%s: pid %d: %d faults, %g per op; want faults over the cell's 100 ops", rec.CellID, p.PID, p.MinorFaults, p.MinorFaultsPerOp)
			}
		}
	}
}
