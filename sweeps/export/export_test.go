package export

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/exitcode"
	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/hostmetrics"
)

var update = flag.Bool("update", false, "rewrite the golden files and the failed-run fixture")

const sampleDir = "../../runs/sample-local"

// failedRun is a small run directory with failed cells (testdata; -update
// makes it again from the sample).
var failedRun = filepath.Join("testdata", "failed-run")

func readRun(t *testing.T, dir string) *sweeps.Run {
	t.Helper()
	run, err := sweeps.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Problems) > 0 {
		t.Fatalf("%s: %v", dir, run.Problems)
	}
	return run
}

func export(t *testing.T, run *sweeps.Run, opt Options) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, run, opt); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// The sample campaign's exports, byte for byte (go test -update rewrites).
func TestGoldenSample(t *testing.T) {
	run := readRun(t, sampleDir)
	for _, tc := range []struct {
		file string
		opt  Options
	}{
		{"sample-local.csv", Options{Format: CSV}},
		{"sample-local.ndjson", Options{Format: NDJSON}},
		{"sample-local-series.csv", Options{Format: CSV, Series: true}},
	} {
		golden(t, tc.file, export(t, run, tc.opt))
	}
}

func golden(t *testing.T, file string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", file)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) && i < len(wl); i++ {
			if gl[i] != wl[i] {
				t.Fatalf("%s differs at line %d:\ngot  %s\nwant %s\n(go test -update if the change is meant)", file, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%s: %d lines, want %d (go test -update if the change is meant)", file, len(gl), len(wl))
	}
}

func parseCSV(t *testing.T, b []byte) []map[string]string {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("csv: %v", err)
	}
	var rows []map[string]string
	for _, r := range recs[1:] {
		m := map[string]string{}
		for i, name := range recs[0] {
			m[name] = r[i]
		}
		rows = append(rows, m)
	}
	return rows
}

// One row per cell and op of the sample, with the record's own figures.
func TestSampleRowsAreTheRecords(t *testing.T) {
	run := readRun(t, sampleDir)
	rows := parseCSV(t, export(t, run, Options{Format: CSV}))
	if len(rows) != len(run.Cells) { // every sample cell is GET or SET alone
		t.Fatalf("%d rows for %d cells", len(rows), len(run.Cells))
	}
	for _, r := range rows {
		rec := run.Cells[r["cell_id"]]
		if rec == nil {
			t.Fatalf("row of an unknown cell %q", r["cell_id"])
		}
		o := rec.Result.Ops[lab.Op(r["op"])]
		checks := []struct{ col, want string }{
			{"status", "done"},
			{"version", rec.Version.Segment},
			{"server_version", rec.Result.Server.Version},
			{"campaign", "local"},
			{"gbps", csvValue(o.Gbps)},
			{"ops_per_sec", csvValue(o.OpsPerSec)},
			{"p99_ms", csvValue(o.Latency.P99 / 1000)},
			{"value_size", csvValue(int64(rec.Workload.ValueSz.Max()))},
			{"request_timeout_s", "60"},
			{"limit", string(rec.Limit.Kind)},
			{"client_cpu_s_per_gb", csvValue(rec.Result.Client.CPUSecPerGB)},
			{"server_main_busy", csvValue(busy(rec.Host.Server.MainBusy))},
		}
		for _, c := range checks {
			if r[c.col] != c.want {
				t.Errorf("%s %s: %s = %q, want %q", r["cell_id"], r["op"], c.col, r[c.col], c.want)
			}
		}
		if p50, p95, p99 := r["p50_ms"], r["p95_ms"], r["p99_ms"]; !(num(t, p50) <= num(t, p95) && num(t, p95) <= num(t, p99)) {
			t.Errorf("%s: p50 %s, p95 %s, p99 %s out of order", r["cell_id"], p50, p95, p99)
		}
	}
	series := parseCSV(t, export(t, run, Options{Format: CSV, Series: true}))
	want := 0
	for _, c := range run.Cells {
		for _, o := range c.Result.Ops {
			want += len(o.Series)
		}
	}
	if len(series) != want || want == 0 {
		t.Errorf("%d series rows, want %d", len(series), want)
	}
}

func num(t *testing.T, s string) float64 {
	t.Helper()
	var f float64
	if err := json.Unmarshal([]byte(s), &f); err != nil {
		t.Fatalf("%q is not a number", s)
	}
	return f
}

// A campaign with failed cells: rows with status failed, identity and
// workload filled, every figure empty; no series rows for them.
func TestFailedCells(t *testing.T) {
	if *update {
		writeFailedRun(t)
	}
	run := readRun(t, failedRun)
	out := export(t, run, Options{Format: CSV})
	golden(t, "failed-run.csv", out)
	rows := parseCSV(t, out)
	type want struct{ status, op, stop string }
	wants := []want{
		{"done", "GET", "completed"},
		{"failed", "SET", ""},            // the server never started: no record
		{"failed", "GET", "server_lost"}, // a partial record
		{"failed", "GET", ""},            // a mixed cell: one row per op
		{"failed", "SET", ""},
	}
	if len(rows) != len(wants) {
		t.Fatalf("%d rows, want %d:\n%s", len(rows), len(wants), out)
	}
	figures := []string{"limit", "client_limited", "measured_s", "ops", "gbps", "ops_per_sec", "p50_ms", "p95_ms", "p99_ms",
		"max_ms", "client_cpu_s_per_gb", "server_main_busy", "server_other_busy"}
	for i, r := range rows {
		w := wants[i]
		if r["status"] != w.status || r["op"] != w.op || r["stop_reason"] != w.stop {
			t.Errorf("row %d: status %s op %s stop %q, want %+v", i, r["status"], r["op"], r["stop_reason"], w)
		}
		for _, c := range []string{"campaign", "version", "cell_id", "value_size", "connections", "duration_s", "attempts"} {
			if r[c] == "" {
				t.Errorf("row %d (%s): %s empty", i, r["cell_id"], c)
			}
		}
		for _, c := range figures {
			if empty := r[c] == ""; empty != (w.status == "failed") {
				t.Errorf("row %d (%s, %s): %s = %q", i, r["cell_id"], w.status, c, r[c])
			}
		}
		if (r["reason"] == "") != (w.status == "done") {
			t.Errorf("row %d: reason %q", i, r["reason"])
		}
	}
	series := parseCSV(t, export(t, run, Options{Format: CSV, Series: true}))
	if len(series) != len(run.Cells[rows[0]["cell_id"]].Result.Ops[lab.OpGet].Series) {
		t.Errorf("%d series rows, want the done cell's seconds only", len(series))
	}
	for _, r := range series {
		if r["cell_id"] != rows[0]["cell_id"] {
			t.Errorf("series row of %s", r["cell_id"])
		}
	}
	// NDJSON says null where CSV leaves a cell empty.
	nd := export(t, run, Options{Format: NDJSON})
	lines := strings.Split(strings.TrimSpace(string(nd)), "\n")
	var failed map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &failed); err != nil || len(lines) != len(wants) {
		t.Fatalf("ndjson: %d lines, %v", len(lines), err)
	}
	if v, ok := failed["gbps"]; !ok || v != nil || failed["status"] != "failed" {
		t.Errorf("failed row in ndjson: gbps %v (present %v), status %v", v, ok, failed["status"])
	}
}

// writeFailedRun makes testdata/failed-run from the sample's records: one
// done cell (written now, so a v2 record beside the sample's v1 ones), a
// cell whose server never started, one that lost its server mid-run and a
// mixed cell that failed.
func writeFailedRun(t *testing.T) {
	t.Helper()
	os.RemoveAll(failedRun)
	st, err := sweeps.OpenStore(failedRun)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		st.Close()
		for _, d := range []string{sweeps.LogsDir, sweeps.SoakDir, sweeps.LockFile} {
			os.RemoveAll(filepath.Join(failedRun, d))
		}
	}()
	clone := sampleCloner(t)
	done := clone("valkey-9.1.2/GET/16MiB/r1", "GET/16MiB", 0)
	done.Result.Schema = lab.SchemaVersion

	noServer := clone("valkey-9.1.2/SET/16MiB/r1", "SET/16MiB", 1)
	noServer.Workload.Ratio = lab.Ratio{Sets: 100}
	noServer.Status, noServer.Reason, noServer.Attempts = sweeps.StatusFailed, "start server: valkey-server exited: exit status 1", 3
	noServer.Result, noServer.Host, noServer.Limit = nil, nil, nil

	lost := clone("valkey-9.1.2/GET/16MiB/r2", "GET/16MiB", 2)
	lost.Rep = 2
	lost.Status, lost.Reason = sweeps.StatusFailed, "server_lost: every connection failed"
	lost.Result.Stop = lab.Stop{Reason: lab.StopServerLost, Error: "every connection failed", ExitCode: exitcode.ServerLost}

	mixed := clone("valkey-9.1.2/mix50-50/16MiB/r1", "mix50-50/16MiB", 3)
	mixed.Workload.Ratio = lab.Ratio{Gets: 50, Sets: 50}
	mixed.Status, mixed.Reason = sweeps.StatusFailed, "flushall: connection refused"
	mixed.Result, mixed.Host, mixed.Limit = nil, nil, nil

	for _, c := range []*sweeps.CellRecord{done, noServer, lost, mixed} {
		if err := st.WriteCell(c); err != nil {
			t.Fatal(err)
		}
	}
}

// sampleCloner makes copies of a measured record of the sample under
// other cell IDs.
func sampleCloner(t *testing.T) func(id, key string, index int) *sweeps.CellRecord {
	t.Helper()
	src := readRun(t, sampleDir).Cells["valkey-9.1.2/GET/16MiB/r1"]
	if src == nil {
		t.Fatal("the sample lost valkey-9.1.2/GET/16MiB/r1")
	}
	b, err := json.Marshal(src)
	if err != nil {
		t.Fatal(err)
	}
	return func(id, key string, index int) *sweeps.CellRecord {
		var c sweeps.CellRecord
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatal(err)
		}
		c.CellID, c.Key, c.Index = id, key, index
		return &c
	}
}

// A record of a layout this linerate does not know is refused by name,
// not read as if it were v1 or v2.
func TestUnknownRecordLayoutIsRefused(t *testing.T) {
	dir := t.TempDir()
	st, err := sweeps.OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec := readRun(t, sampleDir).Cells["valkey-9.1.2/GET/16MiB/r1"]
	rec.Result.Schema = "linerate.bench/v9"
	if err := st.WriteCell(rec); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	err = Write(&b, readRun(t, dir), Options{Format: CSV})
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "linerate.bench/v9") || !strings.Contains(err.Error(), "valkey-9.1.2_GET_16MiB_r1.json") {
		t.Errorf("err = %v, want the layout and the file named", err)
	}
	if b.Len() != 0 {
		t.Errorf("wrote %d bytes before refusing", b.Len())
	}
}

func TestBadInput(t *testing.T) {
	if _, err := ParseFormat("xlsx"); err == nil || !strings.Contains(err.Error(), "csv or ndjson") {
		t.Errorf("ParseFormat(xlsx): %v", err)
	}
	empty := t.TempDir()
	var ie *InputError
	if err := Write(&bytes.Buffer{}, readRun(t, empty), Options{Format: CSV}); !errors.As(err, &ie) || !strings.Contains(err.Error(), "no cell records") {
		t.Errorf("empty directory: %v", err)
	}
	if err := Write(&bytes.Buffer{}, readRun(t, sampleDir), Options{}); !errors.As(err, &ie) {
		t.Errorf("no format: %v, want an input error", err)
	}
	// A full disk or a closed pipe is the output's fault, not the input's.
	if err := Write(failingWriter{}, readRun(t, sampleDir), Options{Format: NDJSON}); err == nil || errors.As(err, &ie) {
		t.Errorf("failing output: %v", err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// Every value a column gives is of its kind, on every row of every view
// of the three runs.
func TestColumnKinds(t *testing.T) {
	paced, _, _ := pacedRun(t)
	for _, dir := range []string{sampleDir, failedRun, paced} {
		run := readRun(t, dir)
		for _, opt := range views {
			for _, c := range run.Current() {
				for _, r := range rowsOf(c, run.Env, opt) {
					for _, col := range columnsOf(opt) {
						v := col.get(&r)
						var ok bool
						switch v.(type) {
						case nil:
							ok = true
						case string:
							ok = col.Kind == String
						case int64, uint64:
							ok = col.Kind == Int
						case float64:
							ok = col.Kind == Float
						case bool:
							ok = col.Kind == Bool
						}
						if !ok {
							t.Errorf("%s %s: column %s (%s) gave %T", c.CellID, r.op, col.Name, col.Kind, v)
						}
					}
				}
			}
		}
	}
	for _, opt := range views {
		seen := map[string]bool{}
		for _, c := range Columns(opt) {
			if seen[c.Name] {
				t.Errorf("%+v: column %s twice", opt, c.Name)
			}
			seen[c.Name] = true
		}
	}
}

// views are the four row shapes.
var views = []Options{{}, {Series: true}, {Steps: true}, {Sizes: true}}

// docs/result-schema.md lists every column.
func TestDocsListEveryColumn(t *testing.T) {
	b, err := os.ReadFile("../../docs/result-schema.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, opt := range views {
		for _, c := range Columns(opt) {
			if !strings.Contains(string(b), "`"+c.Name+"`") {
				t.Errorf("docs/result-schema.md does not name the export column `%s`", c.Name)
			}
		}
	}
}

// An MGET cell exports as rows of op MGET with its keys per request; a
// GET cell's keys_per_op is empty.
func TestMultiKeyRows(t *testing.T) {
	run := readRun(t, sampleDir)
	id, rec := sampleCell(t, run, "GET cell", func(rec *sweeps.CellRecord) bool {
		return rec.Result != nil && rec.Result.Ops[lab.OpGet] != nil && len(rec.Result.Ops) == 1
	})
	w := rec.Result.Workload
	w.Command, w.KeysPerOp = lab.CommandMGet, 10
	rec.Result.Workload, rec.Workload = w, w
	rec.Result.Ops = map[lab.Op]*lab.OpResult{lab.OpMGet: rec.Result.Ops[lab.OpGet]}
	for _, r := range parseCSV(t, export(t, run, Options{Format: CSV})) {
		switch {
		case r["cell_id"] == id && (r["op"] != "MGET" || r["keys_per_op"] != "10" || r["gbps"] != csvValue(rec.Result.Ops[lab.OpMGet].Gbps)):
			t.Errorf("MGET cell: op %q keys_per_op %q gbps %q", r["op"], r["keys_per_op"], r["gbps"])
		case r["cell_id"] != id && r["keys_per_op"] != "":
			t.Errorf("%s: keys_per_op %q, want empty", r["cell_id"], r["keys_per_op"])
		}
	}
}

// A cluster cell's server_* columns are its busiest node's, the one its
// limit label judged, and its faults per request every node's together.
func TestClusterCellServerColumns(t *testing.T) {
	run := readRun(t, sampleDir)
	id, rec := sampleCell(t, run, "cell with server thread figures", func(rec *sweeps.CellRecord) bool {
		return rec.Host != nil && rec.Host.Server != nil && rec.Result != nil
	})
	first := rec.Host.Server
	first.Node, first.MinorFaultsPerOp = 1, 0.25
	busiest := &hostmetrics.ProcWindow{PID: 99, Node: 2, MainBusy: first.MainBusy + 0.1, IOThreads: 3, IOBusyMax: 0.4, MinorFaultsPerOp: 0.5}
	rec.Host.Nodes = []*hostmetrics.ProcWindow{busiest, {PID: 98, Node: 3, MinorFaultsPerOp: 0.125}}
	for _, r := range parseCSV(t, export(t, run, Options{Format: CSV})) {
		if r["cell_id"] != id {
			continue
		}
		if r["server_main_busy"] != csvValue(busy(busiest.MainBusy)) || r["server_io_threads"] != "3" || r["server_io_busy_max"] != csvValue(0.4) {
			t.Errorf("%s: server_main_busy %q io_threads %q io_busy_max %q, want node 2's %v, 3, 0.4",
				id, r["server_main_busy"], r["server_io_threads"], r["server_io_busy_max"], busiest.MainBusy)
		}
		if r["server_minor_faults_per_op"] != csvValue(0.875) {
			t.Errorf("%s: server_minor_faults_per_op %q, want every node's 0.875", id, r["server_minor_faults_per_op"])
		}
	}
}

// sampleCell is the first cell of run, in cell order, that ok accepts.
func sampleCell(t *testing.T, run *sweeps.Run, what string, ok func(*sweeps.CellRecord) bool) (string, *sweeps.CellRecord) {
	t.Helper()
	for _, rec := range run.Sorted() {
		if ok(rec) {
			return rec.CellID, rec
		}
	}
	t.Fatalf("the sample has no %s", what)
	return "", nil
}

// Floats are printed at the precision they were measured to, in their
// shortest form: latencies to the microsecond (the histograms' unit),
// every other figure to ten significant digits, so a sum or a ratio
// carries no binary noise (no 17.798000000000002) into a spreadsheet.
func TestFloatsAtThePrecisionMeasured(t *testing.T) {
	run := readRun(t, sampleDir)
	id, rec := sampleCell(t, run, "GET cell", func(rec *sweeps.CellRecord) bool {
		return rec.Result != nil && rec.Result.Ops[lab.OpGet] != nil && len(rec.Result.Ops) == 1
	})
	o := rec.Result.Ops[lab.OpGet]
	o.Gbps = 17.698 + 0.1 // 17.798000000000002
	o.OpsPerSec = 1000.0 / 3
	o.Latency.P99 = 17798.000000000004 // µs
	o.Latency.Mean = 2417.4999
	rec.Result.Client.CPUSecPerGB = 0.1 + 0.2
	for _, f := range []Format{CSV, NDJSON} {
		var rows []map[string]string
		if f == CSV {
			rows = parseCSV(t, export(t, run, Options{Format: f}))
		} else {
			for _, line := range strings.Split(strings.TrimSpace(string(export(t, run, Options{Format: f}))), "\n") {
				var m map[string]json.RawMessage
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Fatal(err)
				}
				r := map[string]string{}
				for k, v := range m {
					r[k] = string(v)
				}
				rows = append(rows, r)
			}
		}
		for _, r := range rows {
			if strings.Trim(r["cell_id"], `"`) != id {
				continue
			}
			for col, want := range map[string]string{
				"gbps": "17.798", "ops_per_sec": "333.3333333", "p99_ms": "17.798",
				"mean_ms": "2.417", "client_cpu_s_per_gb": "0.3",
			} {
				if r[col] != want {
					t.Errorf("%s %s: %s = %s, want %s", f, id, col, r[col], want)
				}
			}
		}
	}
}

// A cell whose memory per key was not measurable exports the reason and
// empty per-key figures, never 0; one that persisted without a fork
// exports forks 0, the BGSAVEs asked for and the note.
func TestMemoryAndForkColumns(t *testing.T) {
	run := readRun(t, sampleDir)
	id, rec := sampleCell(t, run, "done cell", func(rec *sweeps.CellRecord) bool { return rec.Result != nil })
	zero := int64(0)
	rec.Memory = &sweeps.MemoryRecord{NotMeasurable: "3 keys were there before the prefill",
		MemoryUsage: &sweeps.KeyMemory{Keys: 16, MeanBytes: 1_052_720, MinBytes: 1_052_720, MaxBytes: 1_052_720}}
	rec.Persistence = []sweeps.PersistenceSecond{{Second: 0, Samples: 2, Forks: &zero}, {Second: 1, Samples: 2, Forks: &zero}}
	rec.Forks, rec.BGSaves, rec.PersistenceNote = &zero, 2, "no fork began in the measured window"
	for _, r := range parseCSV(t, export(t, run, Options{Format: CSV})) {
		if r["cell_id"] != id {
			continue
		}
		for col, want := range map[string]string{
			"bytes_per_key": "", "memory_overhead": "", "memory_not_measurable": "3 keys were there before the prefill",
			"memory_usage_bytes": "1052720", "forks": "0", "bgsaves": "2", "persistence_note": "no fork began in the measured window",
		} {
			if r[col] != want {
				t.Errorf("%s: %s = %q, want %q", id, col, r[col], want)
			}
		}
	}
}
