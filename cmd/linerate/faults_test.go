package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/exitcode"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/sweeps"
)

// `linerate bench` against a server that answers the control plane with
// nonsense: a setup failure (exit 3), the record written, and one line
// that names the server.
func TestBenchMalformedControlReply(t *testing.T) {
	for _, tc := range []struct{ name, reply string }{
		{"negative bulk length", "$-5\r\n"},
		{"bulk length 2^62", "$4611686018427387904\r\n"},
		{"bulk length 100 GB", "$100000000000\r\n"},
		{"negative array length", "*-3\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := labtest.StartPeer(t, labtest.Answer(map[string]string{"PING": "+PONG\r\n", "INFO": tc.reply}))
			rec := filepath.Join(t.TempDir(), "rec.json")
			code, _, stderr := linerate(t, "", "", "bench", "-h", "127.0.0.1", "-p", strconv.Itoa(p.Port),
				"-d", "1s", "-s", "4KiB", "--quiet", "--json", rec)
			if code != exitcode.SetupFailed {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, exitcode.SetupFailed, stderr)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], p.Addr) || !strings.Contains(lines[0], "INFO") {
				t.Errorf("want one line naming %s and INFO, got:\n%s", p.Addr, stderr)
			}
			res, err := lab.ReadResult(rec)
			if err != nil {
				t.Fatalf("no record: %v", err)
			}
			if res.Stop.Reason != lab.StopSetupFailed || res.Stop.ExitCode != exitcode.SetupFailed || !strings.Contains(res.Stop.Error, p.Addr) {
				t.Errorf("record's stop %+v", res.Stop)
			}
		})
	}
}

// A cell record with "ops":{"GET":null} is untrusted input like any file:
// compare, plot and report read around it and name it; none panics.
func TestRecordsWithNullFigures(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	st, err := sweeps.OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx := 0
	for _, v := range []string{"valkey-8.1.8", "valkey-9.1.0"} {
		for rep := 1; rep <= 3; rep++ {
			w := lab.Workload{Ratio: lab.Ratio{Gets: 100}, ValueSz: lab.OneSize(8 << 20), Duration: lab.Duration(time.Second)}
			g := 30.0 + float64(rep) + 150*float64(idx/3)
			res := &lab.Result{Schema: lab.SchemaVersion, Workload: w, Stop: lab.Stop{Reason: lab.StopCompleted},
				Ops: map[lab.Op]*lab.OpResult{lab.OpGet: {Ops: 100, Gbps: g, Latency: lab.LatencySummary{P99: 1500}}}}
			rec := &sweeps.CellRecord{CellID: v + "/GET/8MiB/r" + strconv.Itoa(rep), Key: "GET/8MiB", Index: idx, Rep: rep,
				Status: sweeps.StatusDone, Version: sweeps.VersionID{Segment: v}, Workload: w, Result: res}
			if err := st.WriteCell(rec); err != nil {
				t.Fatal(err)
			}
			idx++
		}
	}
	st.Close()
	bad := filepath.Join(dir, sweeps.CellsDir, "valkey-9.1.0_GET_8MiB_r2.json")
	var m map[string]any
	b, err := os.ReadFile(bad)
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil {
		t.Fatal(err)
	}
	m["result"].(map[string]any)["ops"] = map[string]any{"GET": nil}
	if b, err = json.Marshal(m); err != nil || os.WriteFile(bad, b, 0o644) != nil {
		t.Fatal(err)
	}
	ceiling := filepath.Join(t.TempDir(), "ceiling.json")
	if err := os.WriteFile(ceiling, []byte(`{"schema":"linerate.bench/v1","server":{"name":"linerate-sink"},"ops":{"GET":null}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		args []string
		code int
		want string // in stdout or stderr
	}{
		{[]string{"compare", dir}, 0, "valkey-9.1.0_GET_8MiB_r2.json: result ops.GET: null"},
		{[]string{"compare", dir, "--json"}, 0, "ops.GET: null"},
		{[]string{"plot", dir, "--tables"}, 0, "ops.GET: null"},
		{[]string{"plot", dir, "--format", "svg", "--out", filepath.Join(t.TempDir(), "charts")}, 0, "ops.GET: null"},
		{[]string{"report", dir, "--out", filepath.Join(t.TempDir(), "report.html")}, 0, "ops.GET: null"},
		{[]string{"bench", "--ceiling", ceiling, "-p", "1"}, exitcode.Usage, "ops.GET: null"},
	} {
		t.Run(strconv.Itoa(i)+"-"+tc.args[0], func(t *testing.T) {
			code, stdout, stderr := linerate(t, "", "", tc.args...)
			if code != tc.code || strings.Contains(stderr, "panic") || !strings.Contains(stdout+stderr, tc.want) {
				t.Errorf("exit %d (want %d); want %q in the output\nstdout:\n%s\nstderr:\n%s", code, tc.code, tc.want, stdout, stderr)
			}
		})
	}
}
