package main

import (
	"bufio"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/tuning"
)

// treeFiles reads the fixture tree under root (tuning.ReadFixtureTree).
func treeFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	m, err := tuning.ReadFixtureTree(root)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// sameTree lists how got differs from want, file by file.
func sameTree(t *testing.T, when string, want, got map[string]string) {
	t.Helper()
	for name, b := range want {
		if g, ok := got[name]; !ok {
			t.Errorf("%s: %s is gone", when, name)
		} else if g != b {
			t.Errorf("%s: %s is %q, was %q", when, name, g, b)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: %s is new", when, name)
		}
	}
}

// A local campaign tunes a fixture tree (the c8gn-like host with the
// study's profile). The runner is SIGKILLed while the tree is tuned and
// its snapshot is on disk; a soak on that run directory, then the resumed
// run, each revert that leftover before tuning again, so when the run
// finishes the tree is the original byte for byte. Taking a fresh snapshot
// over the tuned tree would make the tuned values the ones restored.
func TestSweepRunResumedAfterSIGKILLRevertsTheTuning(t *testing.T) {
	t.Parallel()
	redis, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server missing (.ci/setup installs it): %v", err)
	}
	root := t.TempDir()
	if err := tuning.ExpandFixtureFile("../../tuning/testdata/graviton-c8gn16xl.txtar", root); err != nil {
		t.Fatal(err)
	}
	original := treeFiles(t, root)
	dir := t.TempDir()
	campaign := filepath.Join(dir, "tuned.yaml")
	src := `name: tuned
tuning: study-c8gn
versions:
  - {binary: ` + redis + `}
server:
  maxmemory: 256mb
workload:
  ratio: [GET, SET]
  value-size: [256KiB, 1MiB]
  connections: 2
  threads: 1
  keyspace: 4
  rate: 50
  warmup: 200ms
  duration: ` + benchWindow + `
`
	if err := os.WriteFile(campaign, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	args := []string{"sweep", "run", campaign, "--out", out, "--profiles", "../../tuning/profiles", "--tuning-root", root}

	cmd := exec.Command(labtest.Binary(t), args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(stderr)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if !lines.Scan() || time.Now().After(deadline) {
			t.Fatalf("sweep run ended before its first cell: %v", lines.Err())
		}
		if strings.HasPrefix(lines.Text(), "sweep: 1/") {
			break
		}
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if maps.Equal(original, treeFiles(t, root)) {
		t.Fatal("the tree is not tuned after the kill: the test kills too late")
	}
	if _, err := os.Stat(filepath.Join(out, "tuning-snapshot.json")); err != nil {
		t.Fatalf("the killed run left no snapshot: %v", err)
	}
	run, err := sweeps.ReadRun(out)
	if err != nil || len(run.Cells) == 0 {
		t.Fatalf("after the kill: %v, %d cells", err, len(run.Cells))
	}
	cell := run.Sorted()[0].CellID

	code, stdout, errs := linerate(t, "", "", "soak", out, "--cell", cell, "--duration", "10s", "--profiles", "../../tuning/profiles", "--tuning-root", root)
	if code != 0 {
		t.Fatalf("soak: exit %d\nstdout: %s\nstderr: %s", code, stdout, errs)
	}
	sameTree(t, "after the soak", original, treeFiles(t, root))

	code, stdout, errs = linerate(t, "", "", args...)
	if code != 0 {
		t.Fatalf("resumed sweep run: exit %d\nstdout: %s\nstderr: %s", code, stdout, errs)
	}
	sameTree(t, "after the resumed run", original, treeFiles(t, root))
	if run, err = sweeps.ReadRun(out); err != nil || len(run.Cells) != 4 {
		t.Errorf("resumed run: %v, %d cells, want 4", err, len(run.Cells))
	}
	if _, err := os.Stat(filepath.Join(out, "tuning-snapshot.json")); err == nil {
		t.Error("the snapshot is still there after a clean revert: the next run would revert it again")
	}
}
