package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// plot --percentiles draws the latency charts asked for; an unknown one is
// refused with one line naming the flag.
func TestPlotPercentiles(t *testing.T) {
	sample := filepath.Join("..", "..", "runs", "sample-local")
	out := t.TempDir()
	code, stdout, stderr := linerate(t, "", "", "plot", sample, "--out", out, "--format", "svg", "--percentiles", "p95,p99.9")
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	for _, name := range []string{"GET-p95.svg", "SET-p99.9.svg", "GET-server-cpu-per-gb.svg"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "GET-p99.svg")); err == nil {
		t.Error("GET-p99 drawn though not asked for")
	}
	for _, cmd := range []string{"plot", "report"} {
		// (p50 is a percentile like any other now; p101 is none.)
		code, _, stderr = linerate(t, "", "", cmd, sample, "--percentiles", "p101")
		if code != 2 || !strings.Contains(stderr, "--percentiles") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%s --percentiles p101: exit %d: %q", cmd, code, stderr)
		}
	}
}
