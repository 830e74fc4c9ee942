package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/linerate/linerate/lab/labtest"
)

// go install ./cmd/linerate from a clone gives a working linerate in an
// empty GOBIN: the README's way to get the binary without make.
func TestGoInstall(t *testing.T) {
	t.Parallel()
	nativeOnly(t)
	gobin := t.TempDir()
	cmd := exec.Command(labtest.Need(t, "go"), "install", "./cmd/linerate")
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "GOBIN="+gobin, "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install ./cmd/linerate: %v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(gobin, "linerate"), "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "linerate ") {
		t.Fatalf("installed linerate version: %v, printed %q", err, out)
	}
}

// make install puts the binary, the man pages and the completion scripts
// under PREFIX, the bash one loads, and make uninstall leaves no file.
func TestMakeInstall(t *testing.T) {
	t.Parallel()
	nativeOnly(t)
	makeBin := labtest.Need(t, "make")
	prefix := t.TempDir()
	repo := filepath.Join("..", "..")
	// -o build: install the binary the tests share rather than build one.
	vars := []string{"-C", repo, "-s", "-o", "build", "PREFIX=" + prefix, "BIN=" + labtest.Binary(t)}
	if out, err := exec.Command(makeBin, append(vars, "install")...).CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	man, _ := filepath.Glob(filepath.Join(repo, "man", "*.1"))
	for _, f := range append([]string{"bin/linerate", "share/bash-completion/completions/linerate",
		"share/zsh/site-functions/_linerate", "share/fish/vendor_completions.d/linerate.fish"},
		prefixed("share/man/man1/", man)...) {
		if st, err := os.Stat(filepath.Join(prefix, f)); err != nil || st.Size() == 0 {
			t.Errorf("make install: %s missing or empty (%v)", f, err)
		}
	}
	load := "source " + filepath.Join(prefix, "share/bash-completion/completions/linerate") + " && complete -p linerate"
	if out, err := exec.Command(labtest.Need(t, "bash"), "-c", load).CombinedOutput(); err != nil || !strings.Contains(string(out), "__start_linerate") {
		t.Errorf("the installed bash completion does not load: %v\n%s", err, out)
	}
	if out, err := exec.Command(makeBin, append(vars, "uninstall")...).CombinedOutput(); err != nil {
		t.Fatalf("make uninstall: %v\n%s", err, out)
	}
	_ = filepath.WalkDir(prefix, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("make uninstall left %s", p)
		}
		return err
	})
}

// prefixed is dir joined with the base name of each of files.
func prefixed(dir string, files []string) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = dir + filepath.Base(f)
	}
	return out
}

// nativeOnly skips under an emulator: the installed binary, the go tool
// and make are the build machine's own.
func nativeOnly(t *testing.T) {
	if e := labtest.Emulator(); e != "" {
		t.Skipf("under %s: judged natively only", e)
	}
}

// The README states the Go version go.mod asks for.
func TestReadmeStatesGoVersion(t *testing.T) {
	mod, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var goLine string
	for _, l := range strings.Split(string(mod), "\n") {
		if v, ok := strings.CutPrefix(l, "go "); ok {
			goLine = v
		}
	}
	parts := strings.Split(goLine, ".")
	if len(parts) < 2 {
		t.Fatalf("go.mod: no go line (%q)", goLine)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "Go " + parts[0] + "." + parts[1]; !strings.Contains(string(readme), want) {
		t.Errorf("README.md does not say %q (go.mod: go %s)", want, goLine)
	}
}
