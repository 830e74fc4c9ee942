package kernel

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// On a root of its own, processes are matched to a namespace file by the
// file their ns/net link leads to, not by name.
func TestInNetnsFixture(t *testing.T) {
	root := t.TempDir()
	nsA, nsB := filepath.Join(root, "nsA"), filepath.Join(root, "nsB")
	for _, f := range []string{nsA, nsB} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for pid, ns := range map[string]string{"10": nsA, "11": nsB, "12": nsA} {
		dir := filepath.Join(root, "proc", pid, "ns")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(ns, filepath.Join(dir, "net")); err != nil {
			t.Fatal(err)
		}
	}
	// A process with no ns/net (gone, or a kernel thread's view) is left out.
	if err := os.MkdirAll(filepath.Join(root, "proc", "13"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := FS{Root: root}.InNetns(nsA)
	if err != nil || !slices.Equal(got, []int{10, 12}) {
		t.Errorf("InNetns(nsA) = %v, %v; want [10 12]", got, err)
	}
	if _, err := (FS{Root: root}).InNetns(filepath.Join(root, "missing")); err == nil {
		t.Error("a missing namespace file gave no error")
	}
}

// On this machine a child started here shares this process's namespace.
func TestInNetnsReal(t *testing.T) {
	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	got, err := here.InNetns("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int{os.Getpid(), child.Process.Pid} {
		if !slices.Contains(got, pid) {
			t.Errorf("pid %d missing from the processes in this namespace (%d listed)", pid, len(got))
		}
	}
}
