package export

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The exports read as their users read them: Python's csv module (and its
// json module for NDJSON) get the right row counts, the header in column
// order, and a value of its column's kind in every field.
func TestPythonReadsTheExports(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 missing (Debian python3): %v", err)
	}
	run := readRun(t, sampleDir)
	paced, _, _ := pacedRun(t)
	pacedSeconds := 0
	for _, c := range readRun(t, paced).Cells {
		if c.Result != nil {
			for _, o := range c.Result.Ops {
				pacedSeconds += len(o.Series)
			}
		}
	}
	series := 0
	for _, c := range run.Cells {
		for _, o := range c.Result.Ops {
			series += len(o.Series)
		}
	}
	for _, tc := range []struct {
		name string
		dir  string
		opt  Options
		rows int
	}{
		{"sample csv", sampleDir, Options{Format: CSV}, len(run.Cells)},
		{"sample ndjson", sampleDir, Options{Format: NDJSON}, len(run.Cells)},
		{"sample series csv", sampleDir, Options{Format: CSV, Series: true}, series},
		{"sample series ndjson", sampleDir, Options{Format: NDJSON, Series: true}, series},
		{"failed cells csv", failedRun, Options{Format: CSV}, 5},
		{"failed cells ndjson", failedRun, Options{Format: NDJSON}, 5},
		{"paced csv", paced, Options{Format: CSV}, 5},
		{"paced ndjson", paced, Options{Format: NDJSON}, 5},
		{"paced series csv", paced, Options{Format: CSV, Series: true}, pacedSeconds},
		{"paced steps csv", paced, Options{Format: CSV, Steps: true}, 4},
		{"paced steps ndjson", paced, Options{Format: NDJSON, Steps: true}, 4},
		{"paced sizes csv", paced, Options{Format: CSV, Sizes: true}, 4},
		{"paced sizes ndjson", paced, Options{Format: NDJSON, Sizes: true}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "export")
			if err := os.WriteFile(f, export(t, readRun(t, tc.dir), tc.opt), 0o644); err != nil {
				t.Fatal(err)
			}
			cols, _ := json.Marshal(Columns(tc.opt))
			out, err := exec.Command(py, filepath.Join("testdata", "check_rows.py"), string(tc.opt.Format), f, string(cols), itoa(tc.rows)).CombinedOutput()
			if err != nil {
				t.Errorf("python: %v\n%s", err, out)
			}
		})
	}
	// The checker is not a rubber stamp: a float in an int column fails.
	bad := filepath.Join(t.TempDir(), "bad.csv")
	os.WriteFile(bad, []byte("n\n1.5\n"), 0o644)
	out, err := exec.Command(py, filepath.Join("testdata", "check_rows.py"), "csv", bad, `[{"name":"n","kind":"int"}]`, "1").CombinedOutput()
	if err == nil {
		t.Errorf("the checker passed 1.5 as an int: %s", out)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
