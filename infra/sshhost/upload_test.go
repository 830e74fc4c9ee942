package sshhost

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The unpack step on a real host (sshd in a namespace, its sh, gzip and
// sha256sum): a file lands only with the right checksum, and nothing is
// left behind on any path.
func TestUnpackChecksTheSum(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	h, err := New(l.config(l.pair.Client, filepath.Join(l.dir, "known_hosts")))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	dir := filepath.Join(l.dir, "unpack") // the namespaces share this file system
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	payload := bytes.Repeat([]byte("linerate "), 100000)
	local := filepath.Join(t.TempDir(), "payload")
	if err := os.WriteFile(local, payload, 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := fileSHA256(local)
	if err != nil {
		t.Fatal(err)
	}
	gz, err := gzipFile(local)
	if err != nil {
		t.Fatal(err)
	}
	if zr, err := gzip.NewReader(bytes.NewReader(gz)); err != nil || len(gz) >= len(payload)/10 {
		t.Fatalf("gzipFile: %d bytes from %d (%v)", len(gz), len(payload), err)
	} else {
		zr.Close()
	}
	put := func(name string, b []byte) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	leftovers := func(t *testing.T, want ...string) {
		t.Helper()
		ents, _ := os.ReadDir(dir)
		var got []string
		for _, e := range ents {
			got = append(got, e.Name())
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("directory holds %q, want %q", got, want)
		}
	}
	dst := filepath.Join(dir, "linerate-x")
	for _, tc := range []struct {
		name        string
		packed      []byte
		sum, errHas string
	}{
		{"wrong checksum", gz, strings.Repeat("0", 64), "sha256"},
		{"not gzip data", payload[:4096], sum, "gzip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := h.unpack(ctx, put("bad.gz", tc.packed), dst, tc.sum)
			if err == nil || !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("unpack: %v, want an error naming %s", err, tc.errHas)
			}
			leftovers(t)
		})
	}
	if err := h.unpack(ctx, put("c.gz", gz), dst, sum); err != nil {
		t.Fatal(err)
	}
	leftovers(t, "linerate-x")
	if got, _ := os.ReadFile(dst); !bytes.Equal(got, payload) {
		t.Errorf("unpacked %d bytes, want the %d sent", len(got), len(payload))
	}
	if st, err := os.Stat(dst); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("unpacked file: %v %v, want mode 0755", st.Mode(), err)
	}
	// Again after a dropped connection: the packed file is gone, the
	// target is already right.
	if err := h.unpack(ctx, filepath.Join(dir, "c.gz"), dst, sum); err != nil {
		t.Errorf("unpack again: %v", err)
	}
	leftovers(t, "linerate-x")
}
