package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/infra/netns"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/sweeps"
)

// linerate link on a netns campaign: the pair is brought up, the link
// measured both ways with one connection and with the campaign's count,
// printed, stored as env.json's link, and the pair is gone after. The
// command, its sink and its benches run on one CPU (taskset): link is a
// closed loop, so its four 3 s windows would otherwise take both CPUs
// from the tests beside it, and the test reads that figures were measured
// and stored, not how high they are.
func TestLinkCommandOnNetns(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("network namespaces need root; CI runs as root")
		}
		t.Skip("network namespaces need root")
	}
	dir := t.TempDir()
	campaign := filepath.Join(dir, "l.yaml")
	src := "name: l\nprovider: netns\nversions:\n  - {binary: /usr/bin/redis-server}\nworkload:\n  value-size: 1MiB\n  connections: [2, 3]\n"
	if err := os.WriteFile(campaign, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	before, err := netns.Owned()
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	code, stdout, stderr := onOneCPU(t, "link", campaign, "--out", run, "--duration", benchWindow, "--warmup", "0s", "--value-size", "4MiB")
	if code != 0 {
		t.Fatalf("exit %d:\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"1 conn    3 conns", "GET (server to client)", "SET (client to server)", "server: lr-srv (veth), MTU 1500", "stored in " + run + "/env.json"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	b, err := os.ReadFile(filepath.Join(run, sweeps.EnvFile))
	if err != nil {
		t.Fatal(err)
	}
	var env sweeps.Environment
	if err := json.Unmarshal(b, &env); err != nil || env.Link == nil {
		t.Fatalf("env.json: %v: %s", err, b)
	}
	l := env.Link
	if l.Connections != 3 || l.Duration.String() != benchWindow || l.ValueSize != 4<<20 || l.GET.PerFlowGbps <= 0 || l.SET.Gbps <= 0 {
		t.Errorf("link %+v", l)
	}
	// A namespace new since the start whose process is gone is the
	// command's, left behind (other tests' live ones are theirs).
	left, err := netns.Leftovers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range left {
		if !slices.Contains(before, l.Name) {
			t.Errorf("namespace %s left by pid %d", l.Name, l.PID)
		}
	}
}

// onOneCPU runs linerate with args under taskset on the first CPU this
// test may use, so it and every process it starts share that one CPU.
func onOneCPU(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	cpu := 0
	for !set.IsSet(cpu) {
		cpu++
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, labtest.Need(t, "taskset"), append([]string{"-c", strconv.Itoa(cpu), labtest.Binary(t)}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}
