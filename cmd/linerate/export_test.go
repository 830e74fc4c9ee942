package main

import (
	"encoding/csv"
	"path/filepath"
	"strings"
	"testing"
)

// linerate export on a campaign with failed cells: every cell's rows,
// failed ones with status failed and empty figures, exit 0; bad flags
// exit 2 with one line naming them.
func TestExportCommand(t *testing.T) {
	failedRun := filepath.Join("..", "..", "sweeps", "export", "testdata", "failed-run")
	run := func(args ...string) (int, string, string) {
		t.Helper()
		return linerate(t, "", "", append([]string{"export"}, args...)...)
	}

	code, out, stderr := run(failedRun)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(recs) != 6 {
		t.Fatalf("%d CSV lines (%v), want a header and 5 rows:\n%s", len(recs), err, out)
	}
	col := map[string]int{}
	for i, name := range recs[0] {
		col[name] = i
	}
	failed := 0
	for _, r := range recs[1:] {
		if r[col["status"]] != "failed" {
			continue
		}
		failed++
		if r[col["gbps"]] != "" || r[col["p99_ms"]] != "" || r[col["reason"]] == "" || r[col["value_size"]] == "" {
			t.Errorf("failed row: gbps %q p99 %q reason %q value_size %q", r[col["gbps"]], r[col["p99_ms"]], r[col["reason"]], r[col["value_size"]])
		}
	}
	if failed != 4 {
		t.Errorf("%d failed rows, want 4", failed)
	}

	code, out, _ = run(failedRun, "--format", "ndjson", "--series")
	if code != 0 || strings.Count(out, "\n") != 4 || !strings.HasPrefix(out, `{"campaign":"local"`) {
		t.Errorf("--series ndjson: exit %d, %d lines:\n%.300s", code, strings.Count(out, "\n"), out)
	}

	// The sample is closed loop of one size: no ramp steps, no size classes.
	for _, view := range []string{"--steps", "--sizes"} {
		code, out, stderr := run(failedRun, view)
		if recs, err := csv.NewReader(strings.NewReader(out)).ReadAll(); code != 0 || err != nil || len(recs) != 1 {
			t.Errorf("%s: exit %d, %d CSV lines (%v), want the header alone\n%s", view, code, len(recs), err, stderr)
		}
	}

	if code, help, _ := run("--help"); code != 0 || !strings.Contains(help, "Usage: linerate export") || !strings.Contains(help, "--steps") {
		t.Errorf("--help: exit %d\n%s", code, help)
	}
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{failedRun, "--format", "xlsx"}, "--format"},
		{[]string{failedRun, "--bogus"}, "--bogus"},
		{nil, "one run directory"},
		{[]string{failedRun, failedRun}, "one run directory"},
		{[]string{failedRun, "--series", "--steps"}, "give one"},
		{[]string{filepath.Join(t.TempDir(), "nope")}, "nope"},
		{[]string{t.TempDir()}, "no cell records"},
	} {
		code, out, stderr := run(tc.args...)
		if code != 2 || out != "" || !strings.Contains(stderr, tc.says) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("export %q: exit %d, stdout %q, stderr %q; want exit 2 and one line naming %s", tc.args, code, out, stderr, tc.says)
		}
	}
}
