package sweeps

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The test binary doubles as the helper process for lock and crash tests:
// with SWEEPS_HELPER set it runs that role instead of the tests.
func TestMain(m *testing.M) {
	switch os.Getenv("SWEEPS_HELPER") {
	case "":
		// The runner starts watcher and sampler goroutines per cell; none
		// may outlive its run.
		goleak.VerifyTestMain(m)
	case "hold-lock":
		st, err := OpenStore(os.Getenv("SWEEPS_DIR"))
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("locked")
		time.Sleep(time.Minute) // killed by the test
		st.Close()
	case "write-cells":
		st, err := OpenStore(os.Getenv("SWEEPS_DIR"))
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		// Large records, so a kill lands mid-write often.
		pad := strings.Repeat("x", 1<<20)
		for i := 0; i < 100000; i++ {
			rec := &CellRecord{CellID: fmt.Sprintf("v/GET/1MiB/r%d", i%50), Status: StatusDone, Reason: pad, Attempts: i}
			if err := st.WriteCell(rec); err != nil {
				fmt.Println("error:", err)
				os.Exit(1)
			}
			if i == 10 {
				fmt.Println("writing")
			}
		}
	case "run":
		c, err := ParseCampaign("rt.yaml", []byte(runSpec))
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		p, err := NewPlan(context.Background(), c, nil)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		st, err := OpenStore(os.Getenv("SWEEPS_DIR"))
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fs := &fakeStarter{}
		r := &Runner{Plan: p, Store: st, Servers: fs, Bench: &fakeBench{starter: fs, delay: 40 * time.Millisecond},
			Progress: NewProgress(os.Stdout, false)}
		if _, err := r.Run(context.Background()); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
	}
	os.Exit(0)
}

// helper starts this test binary in a helper role and waits for its first
// line of output.
func helper(t *testing.T, role, dir, waitFor string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SWEEPS_HELPER="+role, "SWEEPS_DIR="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	rd := bufio.NewReader(stdout)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("helper %s: %v (last %q)", role, err, line)
		}
		if strings.HasPrefix(line, "error:") {
			t.Fatalf("helper %s: %s", role, line)
		}
		if strings.Contains(line, waitFor) {
			return cmd, rd
		}
	}
	t.Fatalf("helper %s never said %q", role, waitFor)
	return nil, nil
}

func TestStoreLockRefusesSecondRunner(t *testing.T) {
	dir := t.TempDir()
	cmd, _ := helper(t, "hold-lock", dir, "locked")
	_, err := OpenStore(dir)
	var le *LockedError
	if !errors.As(err, &le) {
		t.Fatalf("second runner: %v, want LockedError", err)
	}
	if le.PID != cmd.Process.Pid || !strings.Contains(err.Error(), "linerate pid "+strconv.Itoa(cmd.Process.Pid)) {
		t.Errorf("error %q names pid %d, want %d", err, le.PID, cmd.Process.Pid)
	}
	// The kernel drops a flock when its holder dies, even by SIGKILL.
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	st, err := OpenStore(dir)
	if err != nil {
		t.Fatalf("after the holder died: %v", err)
	}
	st.Close()
}

// A writer killed at random moments leaves every cell file whole: old or
// new, never torn. Temp files it left are ignored by readers and removed by
// the next lock holder.
func TestStoreSurvivesSIGKILL(t *testing.T) {
	for round := 0; round < 3; round++ {
		dir := t.TempDir()
		cmd, _ := helper(t, "write-cells", dir, "writing")
		time.Sleep(time.Duration(round*37) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		run, err := ReadRun(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(run.Problems) != 0 || len(run.Cells) == 0 {
			t.Fatalf("round %d: %d cells, problems %v", round, len(run.Cells), run.Problems)
		}
		for id, c := range run.Cells {
			if len(c.Reason) != 1<<20 || c.Status != StatusDone {
				t.Errorf("%s torn: reason %d bytes", id, len(c.Reason))
			}
		}
		st, err := OpenStore(dir)
		if err != nil {
			t.Fatal(err)
		}
		ents, _ := os.ReadDir(filepath.Join(dir, CellsDir))
		for _, e := range ents {
			if isTemp(e.Name()) {
				t.Errorf("temp %s left after reopening", e.Name())
			}
		}
		st.Close()
	}
}

// SIGKILL the real runner mid-campaign, then resume: nothing done is lost
// or redone, and the campaign completes.
func TestRunnerResumeAfterSIGKILL(t *testing.T) {
	dir := t.TempDir()
	cmd, _ := helper(t, "run", dir, "sweep: 3/8")
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	before, err := ReadRun(dir)
	if err != nil || len(before.Problems) != 0 {
		t.Fatalf("after kill: %v %v", err, before.Problems)
	}
	n := len(before.Cells)
	if n < 3 || n >= 8 {
		t.Fatalf("%d cells on disk after killing at 3/8", n)
	}
	p := testPlan(t, runSpec)
	r, _, fb, _ := newRunner(t, dir, p, nil)
	sum, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(fb.calls) != 8-n || sum.Kept != n || sum.Done != 8 {
		t.Errorf("resume ran %d cells (want %d), %+v", len(fb.calls), 8-n, sum)
	}
	after, _ := ReadRun(dir)
	for id, c := range before.Cells {
		if !after.Cells[id].Started.Equal(c.Started) {
			t.Errorf("%s was redone", id)
		}
	}
}

func TestReadRunTolerates(t *testing.T) {
	dir := t.TempDir()
	st, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.WriteCell(&CellRecord{CellID: "a/GET/1MiB/r1", Status: StatusDone}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	cells := filepath.Join(dir, CellsDir)
	os.WriteFile(filepath.Join(cells, ".a_GET_1MiB_r2.json.tmp-123"), []byte("{\"cell_id\":"), 0o644)
	os.WriteFile(filepath.Join(cells, "junk.json"), []byte("{not json"), 0o644)
	os.WriteFile(filepath.Join(cells, "README"), []byte("hi"), 0o644)
	run, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Cells) != 1 || len(run.Problems) != 1 || !strings.Contains(run.Problems[0], "junk.json") || run.Env != nil {
		t.Errorf("cells %d problems %v", len(run.Cells), run.Problems)
	}
	// A half-run directory without cells/ reads as empty, not as an error.
	empty := t.TempDir()
	if r, err := ReadRun(empty); err != nil || len(r.Cells) != 0 {
		t.Errorf("empty run: %v", err)
	}
	b, _ := os.ReadFile(filepath.Join(cells, "a_GET_1MiB_r1.json"))
	var rec map[string]any
	if err := json.Unmarshal(b, &rec); err != nil || rec["schema"] != CellSchema {
		t.Errorf("record schema %v", rec["schema"])
	}
}

// Records of an earlier spec stay on disk but are not current.
func TestRunCurrent(t *testing.T) {
	dir := t.TempDir()
	r, _, _, _ := newRunner(t, dir, testPlan(t, runSpec), nil)
	if _, err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.Store.Close()
	p2 := testPlan(t, strings.Replace(runSpec, "value-size: [1MiB, 2MiB]", "value-size: [1MiB, 3MiB]", 1))
	r2, _, _, _ := newRunner(t, dir, p2, nil)
	if _, err := r2.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	run, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Cells) != 12 || len(run.Current()) != 8 {
		t.Errorf("%d stored, %d current; want 12 and 8", len(run.Cells), len(run.Current()))
	}
	for _, c := range run.Current() {
		if strings.Contains(c.CellID, "2MiB") {
			t.Errorf("%s is from the earlier spec", c.CellID)
		}
	}
	if run.Env == nil || run.Env.SpecHash != p2.SpecHash() || p2.SpecHash() == testPlan(t, runSpec).SpecHash() {
		t.Errorf("spec hash %v", run.Env)
	}
}

// env.json is merged across resumes: a session that starts only some of
// the versions keeps the server facts of the others, recorded earlier.
func TestEnvMergedAcrossResumes(t *testing.T) {
	dir := t.TempDir()
	p := testPlan(t, runSpec)
	session := func(version string, redo bool) *Environment {
		t.Helper()
		r, _, _, _ := newRunner(t, dir, p, nil)
		r.Only = func(c Cell) bool { return strings.HasPrefix(c.ID, version+"/") }
		r.Redo = redo
		if _, err := r.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		r.Store.Close()
		run, err := ReadRun(dir)
		if err != nil || run.Env == nil {
			t.Fatalf("env.json: %v %v", err, run.Problems)
		}
		return run.Env
	}
	servers := func(e *Environment) map[string]ServerFacts {
		m := map[string]ServerFacts{}
		for _, s := range e.Servers {
			m[s.Segment] = s
		}
		return m
	}
	first := session("A", false)
	if s := servers(first); len(s) != 1 || s["A"].Info["valkey_version"] != "A" {
		t.Fatalf("after the first session: %+v", first.Servers)
	}
	second := session("B", false)
	s2 := servers(second)
	if len(s2) != 2 || s2["A"].Info["valkey_version"] != "A" || s2["B"].Info["valkey_version"] != "B" {
		t.Fatalf("resumed with --only B: servers %+v, want A's facts kept beside B's", second.Servers)
	}
	if !second.Created.Equal(first.Created) || !second.Updated.After(first.Updated) {
		t.Errorf("created %v → %v, updated %v → %v", first.Created, second.Created, first.Updated, second.Updated)
	}
	third := session("A", true)
	s3 := servers(third)
	if len(s3) != 2 || !s3["A"].Started.After(s2["A"].Started) || !s3["B"].Started.Equal(s2["B"].Started) {
		t.Errorf("A restarted: servers %+v, want A's facts renewed and B's kept", third.Servers)
	}
	if third.Servers[0].Segment != "A" {
		t.Errorf("order changed: %+v", third.Servers)
	}
}
