package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/exitcode"
	"github.com/linerate/linerate/lab/hdrfile"
	"github.com/linerate/linerate/lab/labtest"
)

// pacedBench starts the arguments of a bench whose records and files the
// test reads but whose speed it does not judge: benchWindow at 100
// requests a second, with a queue limit no freeze of the machine reaches
// (nothing is dropped), so the window does not take both CPUs from the
// tests beside it as a closed loop against a local server does.
func pacedBench() []string {
	return []string{"bench", "--rate", "100", "--queue-limit", labtest.PacedQueueLimit.String(), "-d", benchWindow}
}

// bench --hgrm-dir writes the record's HdrHistogram files under its run
// ID; a directory it cannot make is refused before anything runs.
func TestBenchHgrmDir(t *testing.T) {
	t.Parallel()
	srv := labtest.StartRedis(t)
	dir := filepath.Join(t.TempDir(), "hgrm")
	rec := filepath.Join(t.TempDir(), "r.json")
	code, out, stderr := linerate(t, "", "", append(pacedBench(), "--quiet", "-p", strconv.Itoa(srv.Port), "-c", "2", "-t", "1",
		"-s", "64KiB", "-n", "8", "--prefill", "-r", "50:50", "--warmup", "200ms", "--json", rec, "--hgrm-dir", dir)...)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, stderr)
	}
	b, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	var res lab.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	files, err := hdrfile.Files(&res)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 4 {
		t.Fatalf("the record gives %d HDR files, want GET and SET .hgrm and .hlog", len(files))
	}
	for _, f := range files {
		p := filepath.Join(dir, res.RunID+"."+f.Name)
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, f.Data) {
			t.Errorf("%s: %v; differs from the record's", p, err)
		}
		if !strings.Contains(out, p) {
			t.Errorf("the summary does not name %s:\n%s", p, out)
		}
	}

	notDir := filepath.Join(t.TempDir(), "file")
	os.WriteFile(notDir, []byte("x"), 0o644)
	code, out, stderr = linerate(t, "", "", "bench", "-p", strconv.Itoa(srv.Port), "-d", "30s", "--hgrm-dir", filepath.Join(notDir, "sub"))
	if code != exitcode.Usage || !strings.Contains(stderr, "--hgrm-dir") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || out != "" {
		t.Errorf("--hgrm-dir under a file: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}

// bench --percentiles: the printed table has a column per percentile
// asked for, in that order, and the record's summaries carry the ones
// without a field of their own; p95 is in every summary and is the
// histogram's value at 95.
func TestBenchPercentiles(t *testing.T) {
	t.Parallel()
	srv := labtest.StartRedis(t)
	rec := filepath.Join(t.TempDir(), "r.json")
	code, out, stderr := linerate(t, "", "", append(pacedBench(), "--quiet", "-p", strconv.Itoa(srv.Port), "-c", "2", "-t", "1",
		"-s", "64KiB", "-n", "8", "--prefill", "-r", "50:50", "--json", rec, "--percentiles", "50,95,99.99")...)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, stderr)
	}
	var head string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "op ") {
			head = strings.Join(strings.Fields(l), " ")
		}
	}
	if !strings.HasPrefix(head, "op Gbps ops/s p50 p95 p99.99 max mean") {
		t.Errorf("table heading %q, want the percentiles asked for:\n%s", head, out)
	}
	res, err := lab.ReadResult(rec)
	if err != nil {
		t.Fatal(err)
	}
	for op, o := range res.Ops {
		l := o.Latency
		p95, _ := l.ValueAt(95)
		p9999, _ := l.ValueAt(99.99)
		if l.Count == 0 || l.P95 != p95 || l.Percentiles["p99.99"] != p9999 || len(l.Percentiles) != 1 {
			t.Errorf("%s: count %d, p95 %v (histogram %v), percentiles %v (histogram p99.99 %v)", op, l.Count, l.P95, p95, l.Percentiles, p9999)
		}
	}
}
