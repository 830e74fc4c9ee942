package start

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/bench"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/hostmetrics"
)

// With PARTS_HELPER=run the test binary is a real runner on a real
// campaign, killed by the test.
func TestMain(m *testing.M) {
	if os.Getenv("PARTS_HELPER") == "run" {
		c, err := sweeps.ParseCampaign("e2e.yaml", []byte(spec(os.Getenv("PARTS_BIN"))))
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		p, err := sweeps.NewPlan(context.Background(), c, nil)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		st, err := sweeps.OpenStore(os.Getenv("PARTS_DIR"))
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		r := &sweeps.Runner{Plan: p, Store: st, Servers: &Starter{}, Bench: bench.Bencher{}, Sampler: hostmetrics.Sampler{},
			Progress: sweeps.NewProgress(os.Stdout, false), Env: &sweeps.Environment{}}
		if _, err := r.Run(context.Background()); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// No goroutine of a starter, bencher or reaper outlives its test.
	goleak.VerifyTestMain(m)
}

// SIGKILL the real runner in the middle of a real campaign, then resume:
// no cell lost, none redone, no torn file.
func TestRealResumeAfterRunnerSIGKILL(t *testing.T) {
	t.Parallel()
	bin := redisBinary(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PARTS_HELPER=run", "PARTS_DIR="+dir, "PARTS_BIN="+bin)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	rd := bufio.NewReader(stdout)
	deadline := time.Now().Add(60 * time.Second)
	for {
		line, err := rd.ReadString('\n')
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("runner: %v %q", err, line)
		}
		if strings.HasPrefix(line, "error:") {
			t.Fatal(line)
		}
		if strings.HasPrefix(line, "sweep: 3/8") {
			break
		}
	}
	time.Sleep(300 * time.Millisecond) // into the fourth cell
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	before, err := sweeps.ReadRun(dir)
	if err != nil || len(before.Problems) != 0 {
		t.Fatalf("after kill: %v %v", err, before.Problems)
	}
	// The launcher gives servers a parent-death signal: the killed
	// runner's server goes with it, and there is nothing left to reap.
	if before.Env == nil || len(before.Env.Servers) == 0 {
		t.Fatal("no server facts recorded")
	}
	orphan, _ := strconv.Atoi(before.Env.Servers[len(before.Env.Servers)-1].Info["process_id"])
	if !labtest.GoneWithin(orphan, labtest.GoneLimit) {
		t.Errorf("server %d outlived its SIGKILLed runner", orphan)
	}
	if reaped := ReapOrphans(context.Background(), before); len(reaped) != 0 {
		t.Errorf("reaped %v after the runner's server went with it", reaped)
	}
	n := len(before.Cells)
	if n < 3 || n > 4 {
		t.Fatalf("%d cells stored after killing during the fourth", n)
	}

	p := plan(t, spec(bin), nil)
	st, err := sweeps.OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	calls := 0
	r := &sweeps.Runner{Plan: p, Store: st, Servers: &Starter{}, Bench: countingBench{bench.Bencher{}, &calls}, Sampler: hostmetrics.Sampler{}}
	sum, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Done != 8 || sum.Kept != n || calls != 8-n {
		t.Errorf("resume: %d bench calls for %d missing cells\n%s", calls, 8-n, sweeps.SummaryText(sum))
	}
	after, _ := sweeps.ReadRun(dir)
	for id, c := range before.Cells {
		if !after.Cells[id].Started.Equal(c.Started) {
			t.Errorf("%s was redone", id)
		}
	}
}

type countingBench struct {
	bench.Bencher
	n *int
}

func (b countingBench) Bench(ctx context.Context, w lab.Workload, mark func(lab.Phase)) (*lab.Result, error) {
	*b.n++
	return b.Bencher.Bench(ctx, w, mark)
}
