package local

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/linerate/linerate/tuning"
)

// The study's profile on a c8gn-like fixture host: apply saves the snapshot
// first, a moved IRQ shows as drift before the next cell, revert restores
// every file.
func TestTunerOnStudyFixture(t *testing.T) {
	root := t.TempDir()
	if err := tuning.ExpandFixtureFile("../../tuning/testdata/graviton-c8gn16xl.txtar", root); err != nil {
		t.Fatal(err)
	}
	before := readTree(t, root)
	prof, path, err := LoadProfile("study-c8gn", "../../tuning/profiles")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(path) != "study-c8gn.yaml" {
		t.Fatalf("profile path %s", path)
	}
	tu := &Tuner{Host: tuning.NewFixtureHost(root), Profile: prof}
	state := t.TempDir()
	snap, err := tu.Apply(context.Background(), state)
	if err != nil {
		t.Fatal(err)
	}
	if saved, err := os.ReadFile(filepath.Join(state, SnapshotFile)); err != nil || string(saved) != string(snap) {
		t.Fatalf("snapshot not kept in the state directory: %v", err)
	}
	if _, drifts, err := tu.Verify(context.Background()); err != nil || drifts != 0 {
		t.Fatalf("right after apply: %d drifts, %v", drifts, err)
	}
	// A device reset piles an IRQ onto CPU 40.
	irq := filepath.Join(root, "proc/irq/41/smp_affinity_list")
	if err := os.WriteFile(irq, []byte("40\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, drifts, err := tu.Verify(context.Background())
	if err != nil || drifts != 1 || !strings.Contains(string(rep), `"irq"`) {
		t.Fatalf("moved IRQ: %d drifts, %s, %v", drifts, rep, err)
	}
	if err := tu.Revert(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(state, SnapshotFile)); err == nil {
		t.Error("the snapshot is kept after a clean revert")
	}
	after := readTree(t, root)
	for name, b := range before {
		if after[name] != b {
			t.Errorf("%s after revert: %q, was %q", name, after[name], b)
		}
	}
	if _, _, err := LoadProfile("no-such-profile", "../../tuning/profiles"); err == nil || !strings.Contains(err.Error(), "no-such-profile") {
		t.Errorf("missing profile: %v", err)
	}
}

func readTree(t *testing.T, root string) map[string]string {
	t.Helper()
	m, err := tuning.ReadFixtureTree(root)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
