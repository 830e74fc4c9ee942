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
	"github.com/linerate/linerate/lab/labtest"
)

// bench --hgrm-dir writes the record's HdrHistogram files under its run
// ID; a directory it cannot make is refused before anything runs.
func TestBenchHgrmDir(t *testing.T) {
	srv := labtest.StartRedis(t)
	dir := filepath.Join(t.TempDir(), "hgrm")
	rec := filepath.Join(t.TempDir(), "r.json")
	code, out, stderr := linerate(t, "", "", "bench", "--quiet", "-p", strconv.Itoa(srv.Port), "-c", "2", "-t", "1",
		"-s", "64KiB", "-n", "8", "--prefill", "-r", "50:50", "--warmup", "200ms", "-d", "2s", "--json", rec, "--hgrm-dir", dir)
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
	files, err := lab.HDRFiles(&res)
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
	if code != lab.ExitUsage || !strings.Contains(stderr, "--hgrm-dir") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || out != "" {
		t.Errorf("--hgrm-dir under a file: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}
