package sweeps

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/linerate/linerate/lab"
)

var update = flag.Bool("update", false, "rewrite golden files")

// writeRun stores records for versions x keys x reps with the given Gbps.
func writeRun(t *testing.T, dir string, gbps map[string]map[string][]float64, clientLimited map[string]bool) *Run {
	t.Helper()
	st, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	idx := 0
	for _, v := range []string{"valkey-8.1.8", "valkey-9.1.0"} {
		for _, key := range []string{"GET/8MiB", "SET/8MiB"} {
			for rep, g := range gbps[v][key] {
				id := v + "/" + key + "/r" + string(rune('1'+rep))
				w := lab.Workload{Ratio: lab.Ratio{Gets: 100}, Duration: lab.Duration(1e9)}
				if key[0] == 'S' {
					w.Ratio = lab.Ratio{Sets: 100}
				}
				rec := &CellRecord{CellID: id, Key: key, Index: idx, Rep: rep + 1, Status: StatusDone,
					Version: VersionID{Segment: v}, Result: fakeResult(w, g), ClientLimited: clientLimited[id]}
				if math.IsNaN(g) {
					rec.Status, rec.Result = StatusFailed, nil
				}
				idx++
				if err := st.WriteCell(rec); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	r, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCompareVersions(t *testing.T) {
	run := writeRun(t, t.TempDir(), map[string]map[string][]float64{
		"valkey-8.1.8": {"GET/8MiB": {33, 32, 34}, "SET/8MiB": {137, 135, 139}},
		"valkey-9.1.0": {"GET/8MiB": {200, 201, 199, 150}, "SET/8MiB": {136, 139, 134}},
	}, map[string]bool{"valkey-9.1.0/GET/8MiB/r4": true})
	c, err := Compare([]*Run{run}, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.A != "valkey-8.1.8" || len(c.Rows) != 2 {
		t.Fatalf("%+v", c)
	}
	get := c.Rows[0]
	if get.Key != "GET/8MiB" || get.B.Stats.Median != 200 || get.B.ClientLimited != 1 || get.Mark != "***" {
		t.Errorf("GET row %+v", get)
	}
	if set := c.Rows[1]; set.Mark != "ns" {
		t.Errorf("SET row mark %s (p %v)", set.Mark, set.Welch)
	}
	var out bytes.Buffer
	if err := WriteComparison(&out, c); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare_versions.txt", out.Bytes())

	p99, err := Compare([]*Run{run}, CompareOptions{Metric: MetricP99, Baseline: "valkey-9.1.0"})
	if err != nil || p99.A != "valkey-9.1.0" || p99.Rows[0].A.Stats.Median != 1.5 || p99.Rows[0].Mark != "ns" {
		t.Errorf("p99 against 9.1: %v %+v", err, p99)
	}
	if b, err := json.Marshal(c); err != nil || !strings.Contains(string(b), `"mark":"***"`) {
		t.Errorf("json: %v %.200s", err, b)
	}
	if _, err := Compare([]*Run{run}, CompareOptions{Baseline: "valkey-7.2"}); err == nil {
		t.Error("unknown baseline accepted")
	}
	if _, err := Compare([]*Run{run}, CompareOptions{Metric: "speed"}); err == nil {
		t.Error("unknown metric accepted")
	}
}

func TestCompareRuns(t *testing.T) {
	a := writeRun(t, filepath.Join(t.TempDir(), "a"), map[string]map[string][]float64{
		"valkey-9.1.0": {"GET/8MiB": {200}, "SET/8MiB": {166, math.NaN()}},
	}, nil)
	b := writeRun(t, filepath.Join(t.TempDir(), "b"), map[string]map[string][]float64{
		"valkey-9.1.0": {"GET/8MiB": {201}, "SET/8MiB": {165}},
	}, nil)
	c, err := Compare([]*Run{a, b}, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rows) != 2 || c.Rows[0].Mark != "n/a" || c.Rows[1].A.Failed != 1 {
		t.Errorf("%+v", c.Rows)
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update after checking):\n--- got\n%s--- want\n%s", name, got, want)
	}
}

// A stored record is untrusted: null where a figure belongs must not
// panic compare; the cell is named as unreadable and left out.
func TestCompareNullFigures(t *testing.T) {
	for _, tc := range []struct{ name, from, to, want string }{
		{"null op", `"GET": {`, `"GET": null, "x": {`, "ops.GET"},
		{"null phase", `"phases": null`, `"phases": {"measure": null}`, "phases.measure"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeRun(t, dir, map[string]map[string][]float64{
				"valkey-8.1.8": {"GET/8MiB": {33, 32, 34}},
				"valkey-9.1.0": {"GET/8MiB": {200, 201, 199}},
			}, nil)
			p := filepath.Join(dir, CellsDir, "valkey-9.1.0_GET_8MiB_r2.json")
			b, err := os.ReadFile(p)
			if err != nil || !bytes.Contains(b, []byte(tc.from)) {
				t.Fatalf("record lacks %q: %v", tc.from, err)
			}
			if err := os.WriteFile(p, bytes.Replace(b, []byte(tc.from), []byte(tc.to), 1), 0o644); err != nil {
				t.Fatal(err)
			}
			run, err := ReadRun(dir)
			if err != nil {
				t.Fatal(err)
			}
			c, err := Compare([]*Run{run}, CompareOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := WriteComparison(&out, c); err != nil {
				t.Fatal(err)
			}
			if len(c.Rows) != 1 || c.Rows[0].B.Stats.N != 2 {
				t.Errorf("rows %+v: the damaged repetition should be left out", c.Rows)
			}
			if !strings.Contains(out.String(), "valkey-9.1.0_GET_8MiB_r2.json: result "+tc.want) {
				t.Errorf("the damaged record is not named:\n%s", out.String())
			}
		})
	}
}
