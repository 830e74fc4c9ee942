package tuning

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Fixture hosts in testdata, by short name.
var fixtures = map[string]string{
	"graviton": "testdata/graviton-c8gn16xl.txtar",
	"x86":      "testdata/x86-smt-2numa.txtar",
	"vm":       "testdata/vm-2cpu.txtar",
}

// fixtureHost expands a fixture into a fresh temporary directory, so tests
// that apply change a copy.
func fixtureHost(t *testing.T, name string) (Host, string) {
	t.Helper()
	dir := t.TempDir()
	if err := ExpandFixtureFile(fixtures[name], dir); err != nil {
		t.Fatal(err)
	}
	return NewFixtureHost(dir), dir
}

// sharedDirs caches one expansion per fixture for tests that only read.
var (
	sharedMu   sync.Mutex
	sharedDirs = map[string]string{}
	sharedRoot string // made and removed by TestMain
)

// sharedFixtureHost is fixtureHost for tests that never write: the fixture
// is expanded once per test binary.
func sharedFixtureHost(t *testing.T, name string) Host {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	dir, ok := sharedDirs[name]
	if !ok {
		dir = filepath.Join(sharedRoot, name)
		if err := ExpandFixtureFile(fixtures[name], dir); err != nil {
			t.Fatal(err)
		}
		sharedDirs[name] = dir
	}
	h := NewFixtureHost(dir)
	h.FS = readOnlyFS{h.FS}
	return h
}

// readOnlyFS makes a test that should only read fail loudly if it writes.
type readOnlyFS struct{ FS }

func (r readOnlyFS) WriteFile(name string, _ []byte) error {
	return fmt.Errorf("write %s on a shared read-only fixture", name)
}

func (r readOnlyFS) Remove(name string) error {
	return fmt.Errorf("remove %s on a shared read-only fixture", name)
}

// readTree reads the fixture tree under dir (ReadFixtureTree).
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out, err := ReadFixtureTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func readFixtureFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func writeFixtureFile(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func loadProfile(t *testing.T, path string) Profile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParseProfile(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return p
}

var bg = context.Background()
