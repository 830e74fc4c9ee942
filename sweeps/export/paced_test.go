package export

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/infra/nicstats"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/sweeps"
)

// pacedRun writes a run directory with one cell of each kind issue 13 and
// the scale-out work added, built from the record's own types on a
// measured record of the sample (so the closed-loop figures are real):
//
//	valkey-9.1.2/GET/16MiB/rate300/r1  --rate 300 --probe 100B@200, two
//	    client hosts, memory, persistence, NIC counters
//	valkey-9.1.2/GET/1MiB/ramp/r1      --ramp 50:800:4:2s, knee at step 2
//	valkey-9.1.2/mix/r1                GET:SET 50:50, -s 1MiB:60,4MiB:40
//	    at --rate 20Gbps, per-size results
//	valkey-9.1.2/GET/1MiB/ramp/r2      the ramp, failed
//
// and env.json with the link as calibrated.
func pacedRun(t *testing.T) (dir string, cells map[string]*sweeps.CellRecord, env *sweeps.Environment) {
	t.Helper()
	dir = t.TempDir()
	st, err := sweeps.OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sample := sampleCloner(t)
	clone := func(id, key string, index int) *sweeps.CellRecord {
		c := sample(id, key, index)
		c.Result.Schema = lab.SchemaVersion
		return c
	}
	i64 := func(v int64) *int64 { return &v }
	stepLat := func(p50, p95, p99 float64) *lab.StepLatency {
		return &lab.StepLatency{Count: 400, P50: p50, P95: p95, P99: p99}
	}

	// --rate 300 with a probe, from two client hosts.
	rate := clone("valkey-9.1.2/GET/16MiB/rate300/r1", "GET/16MiB/rate300", 0)
	w := &rate.Result.Workload
	w.Rate, w.Arrival, w.QueueLimit = lab.Rate{PerSec: 300}, lab.ArrivalPoisson, lab.Duration(time.Second)
	w.Probe = lab.Probe{Size: 100, Rate: lab.Rate{PerSec: 200}}
	rate.Workload = *w
	g := rate.Result.Ops[lab.OpGet]
	service := g.Latency
	service.P50, service.P99, service.P999, service.Max = g.Latency.P50*0.8, g.Latency.P99*0.7, g.Latency.P999*0.7, g.Latency.Max*0.7
	g.Service = &service
	rate.Result.OpenLoop = &lab.OpenLoopResult{Arrival: lab.ArrivalPoisson, QueueLimit: lab.Duration(time.Second),
		Offered: 300, Achieved: 297.5, Due: 1200, Sent: 1190, Completed: 1189, Failed: 1, Unsent: 10, LatenessSlope: 0.0004, Late: 12, Dropped: 0, Sustainable: true}
	rate.Result.Probe = &lab.ProbeResult{Probe: w.Probe, Offered: 200, Connections: lab.ProbeConnections,
		Latency:    lab.LatencySummary{Count: 800, P50: 95, P90: 180, P95: 260, P99: 1210, P999: 2400, Max: 3100, Mean: 140},
		Service:    lab.LatencySummary{Count: 800, P50: 90, P90: 170, P95: 240, P99: 1100, P999: 2200, Max: 3000, Mean: 130},
		Idle:       lab.LatencySummary{Count: 100, P50: 60, P90: 75, P95: 80, P99: 110, P999: 130, Max: 130, Mean: 62},
		IdleLength: lab.Duration(5500 * time.Millisecond), IdleShort: true,
		AddedP99: 1100, AddedLow: 640, AddedHigh: 1450, Sent: 800, Ops: 799, Errors: 1, Late: 3,
		Series: []lab.ProbeSecond{{Second: 0, Ops: 200, P99: 1180}, {Second: 1, Ops: 199, P99: 1240}, {Second: 2, Ops: 200}, {Second: 3, Ops: 200, P99: 990}}}
	rate.Memory = &sweeps.MemoryRecord{
		BeforePrefill: &sweeps.MemorySample{UsedMemory: 900_000, Keys: 0},
		AfterPrefill:  &sweeps.MemorySample{UsedMemory: 900_000 + 8*17_400_000, Keys: 8},
		BytesPerKey:   17_400_000, BytesPerKeyFrom: "prefill", Overhead: 17_400_000.0/16_777_216 - 1,
		MemoryUsage: &sweeps.KeyMemory{Keys: 8, MeanBytes: 16_777_512, MinBytes: 16_777_512, MaxBytes: 16_777_512}}
	rate.Persistence = []sweeps.PersistenceSecond{
		{Second: 0, Samples: 2, RDBBgsaveInProgress: true, LatestForkUsec: 1830, Forks: i64(1), TotalForks: i64(4)},
		{Second: 1, Samples: 2, RDBBgsaveInProgress: true, LatestForkUsec: 1830, Forks: i64(0), TotalForks: i64(4)},
		{Second: 3, Samples: 2, LatestForkUsec: 2450, Forks: i64(1), TotalForks: i64(5)}, // no read fell in second 2
	}
	rate.NIC = []sweeps.NICDelta{
		{NICInfo: sweeps.NICInfo{Host: "server", Interface: "ens5", Driver: "ena", MTU: 9001},
			Deltas: nicstats.Deltas{Counters: map[string]uint64{"bw_out_allowance_exceeded": 1843, "pps_allowance_exceeded": 7, "rx_drops": 2, "tx_timeout": 0}}},
		{NICInfo: sweeps.NICInfo{Host: "client", Interface: "ens5", Driver: "ena", MTU: 9001},
			Deltas: nicstats.Deltas{Counters: map[string]uint64{"bw_in_allowance_exceeded": 0, "rx_drops": 5}}},
		{NICInfo: sweeps.NICInfo{Host: "client-2", Interface: "lo"}, Error: "no driver statistics"},
	}
	one, two := *rate.Result, *rate.Result
	rate.Clients = []sweeps.ClientRecord{{Host: "client (198.18.0.2)", Result: &one}, {Host: "client-2 (198.18.0.3)", Result: &two}}

	// A ramp whose latency doubled at step 2.
	ramp := clone("valkey-9.1.2/GET/1MiB/ramp/r1", "GET/1MiB/ramp", 1)
	w = &ramp.Result.Workload
	w.ValueSz = lab.OneSize(miB)
	w.Ramp = lab.Ramp{From: lab.Rate{PerSec: 50}, To: lab.Rate{PerSec: 800}, Steps: 4, Step: lab.Duration(2 * time.Second)}
	w.Arrival, w.QueueLimit, w.Duration = lab.ArrivalConstant, lab.Duration(time.Second), lab.Duration(8*time.Second)
	ramp.Workload = *w
	for i, off := range []float64{50, 300, 550, 800} {
		achieved := off * 0.999
		lat, svc := stepLat(900, 1100, 1300+float64(i)*100), stepLat(850, 1000, 1200)
		if i == 2 {
			lat = stepLat(2100, 2900, 3400)
		}
		if i == 3 {
			achieved, lat = 700, stepLat(90_000, 400_000, 700_000)
		}
		ramp.Result.Steps = append(ramp.Result.Steps, lab.StepResult{Step: i, Start: lab.Duration(time.Duration(i) * 2 * time.Second),
			Length: lab.Duration(2 * time.Second), Offered: off, Achieved: achieved, Gbps: achieved * 8 * float64(miB) / 1e9,
			Sent: uint64(2 * off), Ops: uint64(2 * achieved), Late: uint64(i * 3), Unsent: uint64(i / 3 * 200), LatenessSlope: float64(i/3) * 0.0625,
			Latency: lat, Service: svc})
	}
	ramp.Result.Knee = &lab.Knee{Step: 2, Offered: 550, FloorStep: 0, FloorP99: 1300, FloorP50: 900,
		P99Ratio: 3400.0 / 1300, P50Ratio: 2100.0 / 900, AchievedRatio: 0.999, Latency: true}
	ramp.Result.OpenLoop = &lab.OpenLoopResult{Arrival: lab.ArrivalConstant, QueueLimit: lab.Duration(time.Second),
		Offered: 425, Achieved: 399.1, Due: 3640, Sent: 3400, Completed: 3192, Failed: 208, Unsent: 200, LatenessSlope: 0.0151,
		Late: 18, Dropped: 40, Sustainable: false, ShortOfOffered: true, QueueGrew: true}

	// A mix of ops and sizes at a bit rate.
	mix := clone("valkey-9.1.2/mix/r1", "mix", 2)
	w = &mix.Result.Workload
	sizes, err := lab.ParseSizeMix("1MiB:60,4MiB:40")
	if err != nil {
		t.Fatal(err)
	}
	w.ValueSz, w.Ratio = sizes, lab.Ratio{Gets: 50, Sets: 50}
	w.Rate, w.Arrival, w.QueueLimit = lab.Rate{BitsPerSec: 20e9}, lab.ArrivalConstant, lab.Duration(time.Second)
	mix.Workload = *w
	realized := sizes.Realize(w.Seed, w.Keyspace)
	mix.Result.SizeMix = &realized
	get := mix.Result.Ops[lab.OpGet]
	set := *get
	set.TTFB = nil
	mix.Result.Ops[lab.OpSet] = &set
	for _, o := range mix.Result.Ops {
		o.Sizes = []lab.SizeResult{
			{Class: miB, Ops: 60, PayloadBytes: 60 * uint64(miB), Gbps: 0.126, Latency: stepLat(2000, 2600, 3100)},
			{Class: 4 * miB, Ops: 40, PayloadBytes: 40 * 4 * uint64(miB), Gbps: 0.335, Errors: 1},
		}
	}
	mix.Result.OpenLoop = &lab.OpenLoopResult{Arrival: lab.ArrivalConstant, QueueLimit: lab.Duration(time.Second),
		Offered: 1089.9, Achieved: 1080.2, Sent: 4359, Sustainable: true}

	failed := clone("valkey-9.1.2/GET/1MiB/ramp/r2", "GET/1MiB/ramp", 3)
	failed.Rep, failed.Workload = 2, ramp.Workload
	failed.Status, failed.Reason, failed.Attempts = sweeps.StatusFailed, "start server: valkey-server exited: exit status 1", 3
	failed.Result, failed.Host, failed.Limit = nil, nil, nil

	cells = map[string]*sweeps.CellRecord{}
	for _, c := range []*sweeps.CellRecord{rate, ramp, mix, failed} {
		if err := st.WriteCell(c); err != nil {
			t.Fatal(err)
		}
		cells[c.CellID] = c
	}
	env = &sweeps.Environment{Campaign: "local", Link: &sweeps.Link{Measured: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC),
		ValueSize: miB, Connections: 8, Clients: 2,
		GET: sweeps.LinkDirection{PerFlowGbps: 9.6, Gbps: 24.8}, SET: sweeps.LinkDirection{PerFlowGbps: 9.4, Gbps: 24.1}}}
	if err := st.WriteEnv(env); err != nil {
		t.Fatal(err)
	}
	return dir, cells, env
}

// cellCheck is a column's text in a row of rowsBy.
type cellCheck struct{ row, col, want string }

func checkCells(t *testing.T, rows map[string]map[string]string, checks []cellCheck) {
	t.Helper()
	for _, c := range checks {
		r, ok := rows[c.row]
		if !ok {
			t.Fatalf("no row %q", c.row)
		}
		if r[c.col] != c.want {
			t.Errorf("%s: %s = %q, want %q", c.row, c.col, r[c.col], c.want)
		}
	}
}

func rowsBy(t *testing.T, b []byte) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	for _, r := range parseCSV(t, b) {
		out[r["cell_id"]+" "+r["op"]] = r
	}
	return out
}

// The cell × op rows carry open loop, the knee, the probe, memory,
// persistence, NIC counters, the link and the client count, each as the
// record holds it; a closed-loop cell of one size leaves them empty.
func TestPacedCellColumns(t *testing.T) {
	dir, cells, env := pacedRun(t)
	rows := rowsBy(t, export(t, readRun(t, dir), Options{Format: CSV}))
	if len(rows) != 5 { // rate GET, ramp GET, mix GET and SET, failed GET
		t.Fatalf("%d rows, want 5: %v", len(rows), rows)
	}
	rate, mix := cells["valkey-9.1.2/GET/16MiB/rate300/r1"].Result, cells["valkey-9.1.2/mix/r1"].Result
	p := rate.Probe
	checks := []cellCheck{
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "clients", "2"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "rate", "300"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "rate_ops_per_sec", "300"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "arrival", "poisson"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "queue_limit_s", "1"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "probe", "100B@200"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "offered_ops_per_sec", "300"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "achieved_ops_per_sec", "297.5"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "sent", "1190"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "late", "12"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "dropped", "0"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "sustainable", "true"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "service_p99_ms", "48.115"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "p99_ms", csvValue(ms(rate.Ops[lab.OpGet].Latency.P99))},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "probe_p99_ms", "1.21"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "probe_idle_p99_ms", "0.11"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "probe_added_p99_ms", csvValue(ms(p.AddedP99))},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "probe_added_p99_low_ms", "0.64"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "probe_added_p99_high_ms", "1.45"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "probe_service_p99_ms", "1.1"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "probe_ops", "799"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "probe_errors", "1"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "probe_late", "3"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "bytes_per_key", "17400000"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "bytes_per_key_from", "prefill"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "memory_overhead", "0.03712081909"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "forks", "2"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "latest_fork_ms", "2.45"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "bgsave_seconds", "2"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "aof_rewrite_seconds", "0"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "nic_allowance_exceeded", "1850"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "nic_allowances", "server ens5 bw_out_allowance_exceeded +1843; server ens5 pps_allowance_exceeded +7"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "nic_drops_errors", "7"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "link_gbps", csvValue(env.Link.GET.Gbps)},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "link_per_flow_gbps", "9.6"},
		{"valkey-9.1.2/GET/16MiB/rate300/r1 GET", "knee_step", ""}, // no ramp

		{"valkey-9.1.2/GET/1MiB/ramp/r1 GET", "clients", "1"},
		{"valkey-9.1.2/GET/1MiB/ramp/r1 GET", "ramp", "50:800:4:2s"},
		{"valkey-9.1.2/GET/1MiB/ramp/r1 GET", "ramp_steps", "4"},
		{"valkey-9.1.2/GET/1MiB/ramp/r1 GET", "rate", ""},
		{"valkey-9.1.2/GET/1MiB/ramp/r1 GET", "knee_step", "2"},
		{"valkey-9.1.2/GET/1MiB/ramp/r1 GET", "knee_offered_ops_per_sec", "550"},
		{"valkey-9.1.2/GET/1MiB/ramp/r1 GET", "knee_p99_ratio", "2.615384615"}, // ramp.Knee.P99Ratio to ten digits
		{"valkey-9.1.2/GET/1MiB/ramp/r1 GET", "knee_by", "latency"},
		{"valkey-9.1.2/GET/1MiB/ramp/r1 GET", "dropped", "40"},
		{"valkey-9.1.2/GET/1MiB/ramp/r1 GET", "sustainable", "false"},
		{"valkey-9.1.2/GET/1MiB/ramp/r1 GET", "probe_p99_ms", ""},
		{"valkey-9.1.2/GET/1MiB/ramp/r1 GET", "nic_allowance_exceeded", ""}, // no NIC read
		{"valkey-9.1.2/GET/1MiB/ramp/r1 GET", "forks", ""},                  // no persistence

		{"valkey-9.1.2/mix/r1 SET", "value_size", ""},
		{"valkey-9.1.2/mix/r1 SET", "value_size_text", "1MiB:60,4MiB:40"},
		{"valkey-9.1.2/mix/r1 SET", "value_size_mean", csvValue(0.6*float64(miB) + 0.4*4*float64(miB))},
		{"valkey-9.1.2/mix/r1 SET", "rate", "20Gbps"},
		// Over the keys' mean (lab's tests check it), not the weights'.
		{"valkey-9.1.2/mix/r1 SET", "rate_ops_per_sec", strconv.FormatFloat(20e9/8/mix.Workload.MeanValueBytes(), 'g', sigFigs, 64)},
		{"valkey-9.1.2/mix/r1 SET", "offered_ops_per_sec", csvValue(mix.OpenLoop.Offered)},
		{"valkey-9.1.2/mix/r1 SET", "link_gbps", "24.1"}, // SET's direction
		{"valkey-9.1.2/mix/r1 SET", "link_per_flow_gbps", "9.4"},
		{"valkey-9.1.2/mix/r1 SET", "service_p99_ms", ""}, // the SET op kept no service time here
	}
	checkCells(t, rows, checks)
	// The failed cell: workload filled, every figure empty.
	f := rows["valkey-9.1.2/GET/1MiB/ramp/r2 GET"]
	if f["status"] != "failed" || f["ramp"] != "50:800:4:2s" || f["clients"] != "" {
		t.Errorf("failed row: status %q ramp %q clients %q", f["status"], f["ramp"], f["clients"])
	}
	for _, c := range []string{"offered_ops_per_sec", "sustainable", "knee_step", "service_p99_ms", "link_gbps", "probe_p99_ms", "bytes_per_key"} {
		if f[c] != "" {
			t.Errorf("failed row: %s = %q, want empty", c, f[c])
		}
	}
	// The sample is closed loop of one size on one client host: the new
	// columns are empty there, not zero.
	for _, r := range parseCSV(t, export(t, readRun(t, sampleDir), Options{Format: CSV})) {
		for _, c := range []string{"rate", "ramp", "arrival", "probe", "offered_ops_per_sec", "sustainable", "service_p99_ms",
			"knee_step", "probe_added_p99_ms", "forks", "nic_allowance_exceeded", "link_gbps"} {
			if r[c] != "" {
				t.Errorf("sample %s: %s = %q, want empty", r["cell_id"], c, r[c])
			}
		}
		if r["clients"] != "1" || r["value_size_mean"] != r["value_size"] {
			t.Errorf("sample %s: clients %q, value_size_mean %q (value_size %q)", r["cell_id"], r["clients"], r["value_size_mean"], r["value_size"])
		}
	}
}

// --steps: one row per ramp step, its figures as recorded, the knee
// marked; cells without a ramp and failed cells have none.
func TestStepRows(t *testing.T) {
	dir, cells, _ := pacedRun(t)
	rows := parseCSV(t, export(t, readRun(t, dir), Options{Format: CSV, Steps: true}))
	steps := cells["valkey-9.1.2/GET/1MiB/ramp/r1"].Result.Steps
	if len(rows) != len(steps) {
		t.Fatalf("%d step rows, want %d", len(rows), len(steps))
	}
	for i, r := range rows {
		s := steps[i]
		for _, c := range []struct{ col, want string }{
			{"cell_id", "valkey-9.1.2/GET/1MiB/ramp/r1"},
			{"op", "GET"},
			{"step", csvValue(int64(i))},
			{"step_start_s", csvValue(s.Start.Seconds())},
			{"offered_ops_per_sec", csvValue(s.Offered)},
			{"achieved_ops_per_sec", csvValue(s.Achieved)},
			{"late", csvValue(s.Late)},
			{"p99_ms", csvValue(ms(s.Latency.P99))},
			{"service_p95_ms", csvValue(ms(s.Service.P95))},
			{"knee", csvValue(i == 2)},
		} {
			if r[c.col] != c.want {
				t.Errorf("step %d: %s = %q, want %q", i, c.col, r[c.col], c.want)
			}
		}
	}
}

// --sizes: one row per op and size class of a mix, in class order.
func TestSizeRows(t *testing.T) {
	dir, cells, _ := pacedRun(t)
	rows := parseCSV(t, export(t, readRun(t, dir), Options{Format: CSV, Sizes: true}))
	mix := cells["valkey-9.1.2/mix/r1"].Result
	if len(rows) != 4 {
		t.Fatalf("%d size rows, want 2 ops × 2 classes", len(rows))
	}
	for _, r := range rows {
		var sr *lab.SizeResult
		for i, s := range mix.Ops[lab.Op(r["op"])].Sizes {
			if csvValue(int64(s.Class)) == r["size_class"] {
				sr = &mix.Ops[lab.Op(r["op"])].Sizes[i]
			}
		}
		if r["cell_id"] != "valkey-9.1.2/mix/r1" || sr == nil {
			t.Fatalf("row of %s %s class %s", r["cell_id"], r["op"], r["size_class"])
		}
		wantP99 := ""
		if sr.Latency != nil {
			wantP99 = csvValue(ms(sr.Latency.P99))
		}
		if r["ops"] != csvValue(sr.Ops) || r["gbps"] != csvValue(sr.Gbps) || r["p99_ms"] != wantP99 || r["size_class_text"] != sr.Class.String() ||
			r["errors"] != csvValue(sr.Errors) {
			t.Errorf("%s %s: ops %s gbps %s p99 %q text %s errors %s, want %+v", r["op"], r["size_class"], r["ops"], r["gbps"], r["p99_ms"], r["size_class_text"], r["errors"], sr)
		}
	}
}

// --series: a paced cell's seconds carry the probe's and persistence's
// second beside the load's.
func TestPacedSeriesColumns(t *testing.T) {
	dir, _, _ := pacedRun(t)
	var seconds []map[string]string
	for _, r := range parseCSV(t, export(t, readRun(t, dir), Options{Format: CSV, Series: true})) {
		if r["cell_id"] == "valkey-9.1.2/GET/16MiB/rate300/r1" {
			seconds = append(seconds, r)
		}
	}
	want := []struct{ probeOps, probeP99, forks, bgsave string }{
		{"200", "1.18", "1", "true"},
		{"199", "1.24", "0", "true"},
		{"200", "", "", ""}, // the probe had no p99 that second; no INFO read fell in it
		{"200", "0.99", "1", "false"},
	}
	if len(seconds) != len(want) {
		t.Fatalf("%d seconds, want %d", len(seconds), len(want))
	}
	for i, w := range want {
		r := seconds[i]
		if r["probe_ops"] != w.probeOps || r["probe_p99_ms"] != w.probeP99 || r["forks"] != w.forks || r["bgsave"] != w.bgsave {
			t.Errorf("second %d: probe_ops %q probe_p99_ms %q forks %q bgsave %q, want %+v", i, r["probe_ops"], r["probe_p99_ms"], r["forks"], r["bgsave"], w)
		}
	}
}

// Two views at once is a question with no one answer.
func TestOneView(t *testing.T) {
	var ie *InputError
	err := Write(&bytes.Buffer{}, readRun(t, sampleDir), Options{Format: CSV, Series: true, Steps: true})
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "one") {
		t.Errorf("series and steps: %v, want an input error", err)
	}
}

const miB lab.Size = 1 << 20
