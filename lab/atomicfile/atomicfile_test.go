package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// Write replaces the file whole and leaves no temp file beside it; a
// directory that is not there is an error naming the file.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.json")
	for _, data := range []string{"first\n", "second, longer\n", ""} {
		if err := Write(path, []byte(data)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != data {
			t.Fatalf("read back %q (%v), want %q", got, err, data)
		}
		ents, _ := os.ReadDir(dir)
		if len(ents) != 1 {
			t.Fatalf("%d files in the directory after a write, want 1", len(ents))
		}
	}
	if err := Write(filepath.Join(dir, "missing", "b.json"), nil); err == nil {
		t.Fatal("a write into a missing directory succeeded")
	}
}

func TestIsTemp(t *testing.T) {
	for name, want := range map[string]bool{".a.json.tmp-123": true, "a.json": false, ".a.json": false, "a.tmp-1": false} {
		if got := IsTemp(name); got != want {
			t.Errorf("IsTemp(%q) = %v, want %v", name, got, want)
		}
	}
}
