package main

import (
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"go.uber.org/goleak"

	"github.com/linerate/linerate/tuning"
)

// TestMain makes this test binary the linerate command too: testscript puts
// a copy of it named linerate on the scripts' PATH, and started under that
// name it runs main. The scripts run the real code without a separate build.
// Run as the tests, it also fails them when a goroutine outlives them.
func TestMain(m *testing.M) {
	testscript.Main(leakChecked{m}, map[string]func(){"linerate": main})
}

// leakChecked runs the tests, then goleak's check, and hands the exit code
// back to testscript.Main, which exits with it after its own cleanup.
type leakChecked struct{ m *testing.M }

func (l leakChecked) Run() int {
	code := 0
	goleak.VerifyTestMain(l.m, goleak.Cleanup(func(c int) { code = c }))
	return code
}

// TestScripts runs testdata/script/*.txtar, one concern of the CLI each.
// Scripts need neither root nor a network; docs/architecture.md (Testing)
// says how to add and run one.
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, scriptParams(t))
}

func scriptParams(t *testing.T) testscript.Params {
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	// testscript removes its own parent directory only after every script
	// ran, so a -run naming some of them would leave one in /tmp each
	// time; the test's own temporary directory goes in every case.
	// -testwork keeps testscript's, to look into.
	root := ""
	if f := flag.Lookup("testwork"); f == nil || f.Value.String() != "true" {
		root = t.TempDir()
	}
	return testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		WorkdirRoot:         root,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(e *testscript.Env) error {
			// The checkout, for its campaigns, sample run and fixtures.
			// Scripts copy what they write to into $WORK.
			e.Setenv("REPO", repo)
			// A server store of the script's own: never the machine's,
			// never one under the fake $HOME.
			e.Setenv("LINERATE_HOME", filepath.Join(e.WorkDir, "store"))
			return nil
		},
		Cmds: map[string]func(*testscript.TestScript, bool, []string){
			"exitcode": cmdExitCode,
			"fixture":  cmdFixture,
		},
	}
}

// cmdExitCode is "exitcode N prog args...": run prog as exec does and fail
// unless it exits with status N. testscript's "! exec" only knows non-zero,
// and the CLI documents distinct codes (2 bad input, 3 setup failed, ...).
func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("exitcode takes no '!': give the status expected")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exitcode N program [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode %q: not a number", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		if ee.ExitCode() < 0 {
			ts.Fatalf("%s ended by %v, not with status %d", args[1], ee, want)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s %s: exit status %d, want %d", args[1], strings.Join(args[2:], " "), got, want)
	}
}

// cmdFixture is "fixture ARCHIVE DIR": expand a tuning fixture host
// (tuning/testdata/*.txtar) into DIR, so a script can apply, verify and
// revert on one tree and read its files (tune --root X.txtar works on a
// copy that is gone when tune ends).
func cmdFixture(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: fixture ARCHIVE.txtar DIR")
	}
	dir := ts.MkAbs(args[1])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		ts.Fatalf("fixture: %v", err)
	}
	if err := tuning.ExpandFixtureFile(ts.MkAbs(args[0]), dir); err != nil {
		ts.Fatalf("fixture %s: %v", args[0], err)
	}
}

// TestScriptsCoverTheCLI keeps the set whole as the CLI grows: every
// command has a help script, every committed campaign a plan script, every
// tuning fixture host a tune plan script.
func TestScriptsCoverTheCLI(t *testing.T) {
	want := map[string]string{}
	for _, c := range newRoot(nil).Commands() {
		if c.IsAvailableCommand() {
			want[c.Name()+"_help"] = "command " + c.Name()
		}
	}
	for _, g := range []struct{ glob, prefix, what string }{
		{"../../sweeps/campaigns/*.yaml", "sweep_plan_", "campaign"},
		{"../../tuning/testdata/*.txtar", "tune_plan_", "fixture host"},
	} {
		files, err := filepath.Glob(g.glob)
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no files (%v)", g.glob, err)
		}
		for _, f := range files {
			base := strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))
			want[g.prefix+base] = g.what + " " + f
		}
	}
	for script, what := range want {
		if _, err := os.Stat(filepath.Join("testdata", "script", script+".txtar")); err != nil {
			t.Errorf("%s has no script: add testdata/script/%s.txtar", what, script)
		}
	}
}
