package main

import (
	"debug/buildinfo"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/sweeps"
)

// A build stamped with VCS information says which commit it is. The
// scripts run the test binary, which carries no stamp; this takes linerate
// built as make build does and checks that version prints what Go stamped, and,
// in a git clone, that the stamp is HEAD.
func TestVersionNamesTheCommit(t *testing.T) {
	t.Parallel()
	bin := labtest.Binary(t) // built as make build does: go build, stamped where Go can
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	stamp := map[string]string{}
	for _, s := range bi.Settings {
		stamp[s.Key] = s.Value
	}

	out, err := exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatalf("linerate version --json: %v", err)
	}
	var b sweeps.Build
	if err := json.Unmarshal(out, &b); err != nil {
		t.Fatalf("linerate version --json printed %q: %v", out, err)
	}
	if b.Commit != stamp["vcs.revision"] || b.Modified != (stamp["vcs.modified"] == "true") {
		t.Errorf("version says commit %q modified %v; the build info says %q modified %q", b.Commit, b.Modified, stamp["vcs.revision"], stamp["vcs.modified"])
	}
	if b.GoVersion != bi.GoVersion {
		t.Errorf("version says %s; built with %s", b.GoVersion, bi.GoVersion)
	}

	text, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("linerate version: %v", err)
	}
	wantCommit := "unknown"
	if b.Commit != "" {
		wantCommit = b.Commit
	}
	if !regexp.MustCompile(`(?m)^commit +` + regexp.QuoteMeta(wantCommit)).Match(text) {
		t.Errorf("linerate version printed\n%s\nwant a line commit %s", text, wantCommit)
	}

	// Go stamps a clone whose .git is a directory; a git worktree (.git
	// is a file) gets no stamp at all.
	gitDir := filepath.Join("..", "..", ".git")
	if st, err := os.Stat(gitDir); err != nil || !st.IsDir() {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI runs in a git clone, but %s is not a directory: no commit to check", gitDir)
		}
		t.Logf("%s is not a git directory (a worktree?): Go stamps no commit, only the agreement above is checked", gitDir)
		return
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	if b.Commit != strings.TrimSpace(string(head)) {
		t.Errorf("version says commit %q; HEAD is %s", b.Commit, head)
	}
}
