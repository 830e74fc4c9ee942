package tuning

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
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

// ReadFixtureTree reads every regular file of a fixture tree by its path
// relative to dir, so a test can check that the tree is as it was: the
// host's files as they are, the _fixture/ stand-ins for devices and units
// as compact JSON, since the fixture host rewrites them in its own layout.
func ReadFixtureTree(dir string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.HasPrefix(rel, "_fixture"+string(filepath.Separator)) && strings.HasSuffix(rel, ".json") {
			var buf bytes.Buffer
			if json.Compact(&buf, b) == nil {
				b = buf.Bytes()
			}
		}
		out[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read fixture tree %s: %w", dir, err)
	}
	return out, nil
}
