package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/linerate/linerate/lab/labtest"
)

// `tune --root X.txtar` expands the fixture into a temporary tree to work
// on; the tree goes when the command ends, whatever its exit code.
func TestTuneTxtarRootLeavesNoTree(t *testing.T) {
	labtest.Binary(t) // built before TMPDIR points at the directory watched
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	fixture, err := filepath.Abs("../../tuning/testdata/vm-2cpu.txtar")
	if err != nil {
		t.Fatal(err)
	}
	profile := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(profile, []byte("nic: eth0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"plan", []string{"tune", "plan", "--profile", profile, "--root", fixture}, 0},
		{"apply", []string{"tune", "apply", "--profile", profile, "--root", fixture, "--snapshot", filepath.Join(t.TempDir(), "s.json")}, 0},
		{"bad input after expanding", []string{"tune", "plan", "--root", fixture}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := linerate(t, "", "", tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			left, _ := os.ReadDir(tmp)
			for _, e := range left {
				t.Errorf("left behind in TMPDIR: %s", e.Name())
			}
		})
	}
}
