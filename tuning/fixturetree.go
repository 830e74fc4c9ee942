package tuning

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// ExpandFixture writes a fixture host, stored as a txtar archive ("-- name --"
// lines followed by the file's content; see testdata/*.txtar), into dir, so
// NewFixtureHost(dir) can read and change it. A name of the form "a -> b"
// makes a symlink a pointing at b, which is how sysfs links a NIC to its
// device. Other packages' tests use it to get a complete host.
func ExpandFixture(archive []byte, dir string) error {
	type entry struct{ name, body string }
	var entries []entry
	lines := strings.SplitAfter(string(archive), "\n")
	cur := -1
	for _, l := range lines {
		t := strings.TrimRight(l, "\n")
		if strings.HasPrefix(t, "-- ") && strings.HasSuffix(t, " --") && len(t) > 6 {
			entries = append(entries, entry{name: strings.TrimSpace(t[3 : len(t)-3])})
			cur = len(entries) - 1
			continue
		}
		if cur >= 0 {
			entries[cur].body += l
		}
	}
	if len(entries) == 0 {
		return fmt.Errorf("expand fixture: no files in archive")
	}
	for _, e := range entries {
		name, target, isLink := strings.Cut(e.name, " -> ")
		clean := path.Clean("/" + name)
		if clean == "/" || strings.Contains(name, "..") {
			return fmt.Errorf("expand fixture: bad name %q", e.name)
		}
		p := filepath.Join(dir, clean)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("expand fixture: %w", err)
		}
		var err error
		if isLink {
			err = os.Symlink(strings.TrimSpace(target), p)
		} else {
			err = os.WriteFile(p, []byte(e.body), 0o644)
		}
		if err != nil {
			return fmt.Errorf("expand fixture %s: %w", e.name, err)
		}
	}
	return nil
}

// ExpandFixtureFile is ExpandFixture for an archive on disk.
func ExpandFixtureFile(archivePath, dir string) error {
	b, err := os.ReadFile(archivePath)
	if err != nil {
		return fmt.Errorf("expand fixture: %w", err)
	}
	if !bytes.Contains(b, []byte("\n-- ")) {
		return fmt.Errorf("expand fixture %s: not a txtar archive", archivePath)
	}
	return ExpandFixture(b, dir)
}
