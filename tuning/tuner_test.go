package tuning_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/tuning"
)

// The study's profile on a c8gn-like fixture host: apply saves the snapshot
// first, a moved IRQ shows as drift before the next cell, revert restores
// every file.
func TestTunerOnStudyFixture(t *testing.T) {
	root := t.TempDir()
	if err := tuning.ExpandFixtureFile("testdata/graviton-c8gn16xl.txtar", root); err != nil {
		t.Fatal(err)
	}
	before := readTree(t, root)
	prof, path, err := tuning.LoadProfile("study-c8gn", "profiles")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(path) != "study-c8gn.yaml" {
		t.Fatalf("profile path %s", path)
	}
	tu := &tuning.Tuner{Host: tuning.NewFixtureHost(root), Profile: prof}
	state := t.TempDir()
	snap, err := tu.Apply(context.Background(), state)
	if err != nil {
		t.Fatal(err)
	}
	if saved, err := os.ReadFile(filepath.Join(state, tuning.SnapshotFile)); err != nil || string(saved) != string(snap) {
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
	if _, err := os.Stat(filepath.Join(state, tuning.SnapshotFile)); err == nil {
		t.Error("the snapshot is kept after a clean revert")
	}
	after := readTree(t, root)
	for name, b := range before {
		if after[name] != b {
			t.Errorf("%s after revert: %q, was %q", name, after[name], b)
		}
	}
	if _, _, err := tuning.LoadProfile("no-such-profile", "profiles"); err == nil || !strings.Contains(err.Error(), "no-such-profile") {
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

// A snapshot a killed run left is reverted before the next apply, unless
// it predates the host's last boot (the reboot reset what it changed): the
// boot time is read through the host's kernel root, a scoped host's too.
func TestLeftoverSnapshotAgainstBootTime(t *testing.T) {
	const boot = 1700000000
	for _, tc := range []struct {
		name   string
		stat   string // /proc/stat of the fixture; "" for none
		taken  time.Time
		scoped bool
		want   string // what the second apply logs
	}{
		{"taken after the boot", fmt.Sprintf("cpu  1 2 3 4\nbtime %d\n", boot), time.Unix(boot+60, 0), false, "reverted the tuning an earlier run left"},
		{"taken before the boot", fmt.Sprintf("cpu  1 2 3 4\nbtime %d\n", boot), time.Unix(boot-60, 0), false, "predates the last boot"},
		{"before the boot, kernel scope", fmt.Sprintf("cpu  1 2 3 4\nbtime %d\n", boot), time.Unix(boot-60, 0), true, "predates the last boot"},
		{"no boot time", "", time.Unix(boot-60, 0), false, "reverted the tuning an earlier run left"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if err := tuning.ExpandFixtureFile("testdata/graviton-c8gn16xl.txtar", root); err != nil {
				t.Fatal(err)
			}
			if tc.stat != "" {
				if err := os.WriteFile(filepath.Join(root, "proc/stat"), []byte(tc.stat), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			prof, _, err := tuning.LoadProfile("study-c8gn", "profiles")
			if err != nil {
				t.Fatal(err)
			}
			host := tuning.NewFixtureHost(root)
			if tc.scoped {
				host = host.WithScope(tuning.ScopeKernel, "/proc/self/ns/net")
			}
			state := t.TempDir()
			// The first run applies and is killed: its snapshot stays.
			if _, err := (&tuning.Tuner{Host: host, Profile: prof}).Apply(context.Background(), state); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(state, tuning.SnapshotFile)
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var snap tuning.Snapshot
			if err := json.Unmarshal(b, &snap); err != nil {
				t.Fatal(err)
			}
			snap.Taken = tc.taken
			if b, err = json.Marshal(snap); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, b, 0o644); err != nil {
				t.Fatal(err)
			}
			var logged []string
			next := &tuning.Tuner{Host: host, Profile: prof, Log: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }}
			if _, err := next.Apply(context.Background(), state); err != nil {
				t.Fatal(err)
			}
			defer next.Revert(context.Background())
			if len(logged) != 1 || !strings.Contains(logged[0], tc.want) {
				t.Errorf("logged %q, want %q", logged, tc.want)
			}
		})
	}
}
