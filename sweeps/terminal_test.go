package sweeps

import (
	"os"
	"testing"
)

// /dev/null is a character device but no terminal: a run whose stderr is
// /dev/null (or a file, or a pipe) gets plain lines, not a redrawn bar.
func TestIsTerminalNotForDevNull(t *testing.T) {
	for _, name := range []string{os.DevNull, t.TempDir() + "/file"} {
		f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if IsTerminal(f) {
			t.Errorf("%s: called a terminal", name)
		}
		f.Close()
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if IsTerminal(w) {
		t.Error("a pipe: called a terminal")
	}
}
