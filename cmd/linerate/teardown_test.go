package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/sweeps"
)

// lockedBuffer is a stderr the test reads while the command writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// sweepRun is `linerate sweep run` started in a process group of its own,
// as a shell starts a job.
type sweepRun struct {
	cmd    *exec.Cmd
	stderr *lockedBuffer
	out    string // the run directory
	done   chan struct{}
}

func startSweepRun(t *testing.T, campaign, out string, args ...string) *sweepRun {
	t.Helper()
	return startSweepRunTo(t, nil, campaign, out, args...)
}

// startSweepRunTo is startSweepRun with its output going to w (nil: the
// run's stderr buffer).
func startSweepRunTo(t *testing.T, w *os.File, campaign, out string, args ...string) *sweepRun {
	t.Helper()
	r := &sweepRun{stderr: &lockedBuffer{}, out: out, done: make(chan struct{})}
	r.cmd = exec.Command(labtest.Binary(t), append([]string{"sweep", "run", campaign, "--out", out}, args...)...)
	r.cmd.Stdout, r.cmd.Stderr = r.stderr, r.stderr
	if w != nil {
		r.cmd.Stdout, r.cmd.Stderr = w, w
	}
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			_ = r.cmd.Process.Kill()
			<-r.done
		}
	})
	return r
}

// serversUnder lists live processes whose working directory is under dir:
// the launcher starts every server in its log directory, in the run's.
func serversUnder(dir string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err == nil && strings.HasPrefix(cwd, dir+string(filepath.Separator)) && labtest.Runs(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// loadMoved is how many bytes a server of the teardown campaign has read
// and written once its cell's load is under way: its start, readiness
// probes and prefill (4 keys of 64 KiB) stay under a third of it, and the
// paced load (100 requests of 64 KiB a second) passes it in a third of a
// second.
const loadMoved = 2 << 20

// untilServing waits for a server of the run to carry the cell's load. A
// server process alone is not enough: a signal in its start, before it
// answers, is rightly met by ending the server at once (SIGTERM, no
// SHUTDOWN asked), which is not the teardown these tests mean to hold.
func (r *sweepRun) untilServing(t *testing.T) []int {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		pids := serversUnder(r.out)
		for _, pid := range pids {
			if ioBytes(pid) >= loadMoved {
				return pids
			}
		}
		select {
		case <-r.done:
			t.Fatalf("sweep run ended before a server carried its load (servers seen: %v):\n%s", pids, r.stderr)
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("no server carried the load in 2 minutes:\n%s", r.stderr)
	return nil
}

// ioBytes is what pid has read and written through system calls (its
// rchar and wchar: a server's socket reads and writes), 0 if unreadable.
func ioBytes(pid int) int64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "io"))
	if err != nil {
		return 0
	}
	var n int64
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if ok && (k == "rchar" || k == "wchar") {
			x, _ := strconv.ParseInt(v, 10, 64)
			n += x
		}
	}
	return n
}

func (r *sweepRun) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	err := r.cmd.Process.Signal(sig)
	if errors.Is(err, os.ErrProcessDone) {
		// Why it ended is the finding: a clean-clone make test once saw a
		// run with a 30 s cell gone a second after its server started.
		<-r.done
		t.Fatalf("signal %v: the run had already ended (%v):\n%s", sig, r.cmd.ProcessState, r.stderr)
	}
	if err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
}

// waitFor waits up to d for stderr to say s.
func (r *sweepRun) waitFor(s string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for !strings.Contains(r.stderr.String(), s) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	return strings.Contains(r.stderr.String(), s)
}

// interruptTwice sends Ctrl-C, and again once the run says it is
// stopping, and requires the run's warning of what a third would do. The
// run must be held in its teardown (refusesShutdown): the waits are
// bounds on a message, not a window the test races.
func (r *sweepRun) interruptTwice(t *testing.T) {
	t.Helper()
	r.signal(t, syscall.SIGINT)
	if !r.waitFor("stopping", time.Minute) {
		t.Fatalf("the first Ctrl-C did not say it stops:\n%s", r.stderr)
	}
	r.signal(t, syscall.SIGINT)
	if !r.waitFor("tearing down, Ctrl-C again in 10 s to abandon", time.Minute) {
		t.Fatalf("the second Ctrl-C did not say what a third would do:\n%s", r.stderr)
	}
}

// nothingLeft checks that none of servers runs and that the run's
// namespaces are gone.
func (r *sweepRun) nothingLeft(t *testing.T, servers []int) {
	t.Helper()
	for _, pid := range servers {
		if labtest.Runs(pid) {
			t.Errorf("server %d still runs", pid)
		}
	}
	if left := serversUnder(r.out); len(left) > 0 {
		t.Errorf("processes of the run still run: %v", left)
	}
	if ns := namespacesOf(t, r.cmd.Process.Pid); len(ns) > 0 {
		t.Errorf("namespaces left: %v", ns)
	}
}

// end waits (bounded) for the run to end and checks it ended by itself,
// not by a signal, with exit code want.
func (r *sweepRun) end(t *testing.T, want int) {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("sweep run did not end:\n%s", r.stderr)
	}
	ws := r.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		t.Fatalf("sweep run was ended by %v before its teardown finished:\n%s", ws.Signal(), r.stderr)
	}
	if code := ws.ExitStatus(); code != want {
		t.Errorf("exit code %d, want %d:\n%s", code, want, r.stderr)
	}
}

// namespacesOf lists the netns provider's namespaces made by pid.
func namespacesOf(t *testing.T, pid int) []string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	var mine []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "lr-"+strconv.Itoa(pid)+"-") {
			mine = append(mine, f[0])
		}
	}
	return mine
}

// teardownCampaign writes a campaign of long cells on provider, with the
// given server block (its keys, inline) and the per-namespace tuning
// profile "ns" when tuned. Their load is paced at 100 requests a second
// (a queue limit no freeze reaches): these tests judge how a run ends, and
// a closed loop would take both CPUs until it does.
func teardownCampaign(t *testing.T, provider string, tuned bool, server string) (campaign, profiles string) {
	t.Helper()
	return teardownCampaignOf(t, provider, tuned, server, "30s", 1)
}

// noSave is a server that saves nothing.
const noSave = `args: [--save, ""]`

// refusesShutdown is a server that does not go until the test says so:
// SHUTDOWN is renamed away, and each stop step waits 10 minutes before the
// launcher escalates to SIGTERM, so the teardown stays open until the test
// ends the server itself (or abandons the run), whatever the machine's
// speed.
const refusesShutdown = `args: [--rename-command, SHUTDOWN, ""], stop-timeout: 10m`

// teardownCampaignOf is teardownCampaign with cells of duration d, reps
// times.
func teardownCampaignOf(t *testing.T, provider string, tuned bool, server, d string, reps int) (campaign, profiles string) {
	t.Helper()
	redis := labtest.Need(t, "redis-server")
	dir := t.TempDir()
	profiles = filepath.Join(dir, "profiles")
	if err := os.MkdirAll(profiles, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(profiles, "ns.yaml"), []byte("nic_address: 198.18.0.1\nirqbalance: leave\nsysctls: {net.core.somaxconn: \"1313\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// No link calibration: these tests stop a run mid-cell.
	src := "name: teardown\nprovider: " + provider + "\ncalibrate: false\nrepetitions: " + strconv.Itoa(reps) + "\n"
	if tuned {
		src += "tuning: ns\n"
	}
	src += `versions:
  - {binary: ` + redis + `}
server: {` + server + `}
workload:
  value-size: 64KiB
  connections: 1
  keyspace: 4
  rate: 100
  queue-limit: ` + labtest.PacedQueueLimit.String() + `
  warmup: 200ms
  duration: ` + d + `
`
	campaign = filepath.Join(dir, "teardown.yaml")
	if err := os.WriteFile(campaign, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return campaign, profiles
}

// The terminal or SSH session of `sweep run` closes mid-cell: the hangup
// is an interrupt like Ctrl-C, so the run tears down: its server stopped,
// the namespaces gone, the tuning reverted (each namespace's agent removes
// its snapshot once it has restored it).
func TestSweepRunHangupTearsDown(t *testing.T) {
	t.Parallel()
	campaign, profiles := teardownCampaign(t, "netns", true, noSave)
	out := filepath.Join(t.TempDir(), "run")
	r := startSweepRun(t, campaign, out, "--profiles", profiles)
	servers := r.untilServing(t)
	for _, role := range []string{"server", "client"} {
		if _, err := os.Stat(filepath.Join(out, "agent-"+role, "tuning-snapshot.json")); err != nil {
			t.Fatalf("the %s namespace is not tuned while a cell runs: %v", role, err)
		}
	}
	// As a closing terminal does: the hangup reaches the job's group.
	if err := syscall.Kill(-r.cmd.Process.Pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	r.end(t, 130)
	r.nothingLeft(t, servers)
	for _, role := range []string{"server", "client"} {
		if _, err := os.Stat(filepath.Join(out, "agent-"+role, "tuning-snapshot.json")); err == nil {
			t.Errorf("the %s namespace's tuning was not reverted (its agent's snapshot is still there)", role)
		}
	}
}

// A second Ctrl-C while the run tears down does not end the teardown: it
// says a third within 10 s would, and the teardown runs to its end. The
// server refuses to stop until the test ends it, so the second Ctrl-C
// lands inside the teardown on any machine.
func TestSweepRunSecondInterruptKeepsTearingDown(t *testing.T) {
	t.Parallel()
	campaign, profiles := teardownCampaign(t, "netns", false, refusesShutdown)
	out := filepath.Join(t.TempDir(), "run")
	r := startSweepRun(t, campaign, out, "--profiles", profiles)
	servers := r.untilServing(t)
	r.interruptTwice(t)
	// The teardown waits on the server: let it go, as a slow server
	// finally would.
	for _, pid := range servers {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	r.end(t, 130)
	if strings.Contains(r.stderr.String(), "abandoned") {
		t.Errorf("the teardown was abandoned:\n%s", r.stderr)
	}
	r.nothingLeft(t, servers)
}

// A third Ctrl-C within 10 s of the second abandons the teardown, as the
// second said: the server (refusing to stop for ten minutes) is not
// waited for. It dies with linerate all the same.
func TestSweepRunThirdInterruptAbandons(t *testing.T) {
	t.Parallel()
	campaign, profiles := teardownCampaign(t, "local", false, refusesShutdown)
	out := filepath.Join(t.TempDir(), "run")
	r := startSweepRun(t, campaign, out, "--profiles", profiles)
	servers := r.untilServing(t)
	r.interruptTwice(t)
	r.signal(t, syscall.SIGINT)
	select {
	case <-r.done:
	case <-time.After(time.Minute): // the teardown would wait ten
		t.Fatalf("a third Ctrl-C did not abandon the teardown:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr.String(), "teardown abandoned") {
		t.Errorf("no word of the abandon:\n%s", r.stderr)
	}
	for _, pid := range servers {
		if !labtest.GoneWithin(pid, labtest.GoneLimit) {
			t.Errorf("server %d outlived the abandoned run", pid)
		}
	}
}

// kill -9 of the runner: nothing of linerate runs to tear down, and its
// server goes all the same (a parent-death signal).
func TestSweepRunKilledLeavesNoServer(t *testing.T) {
	t.Parallel()
	campaign, profiles := teardownCampaign(t, "local", false, noSave)
	out := filepath.Join(t.TempDir(), "run")
	r := startSweepRun(t, campaign, out, "--profiles", profiles)
	servers := r.untilServing(t)
	r.signal(t, syscall.SIGKILL)
	<-r.done
	for _, pid := range servers {
		if !labtest.GoneWithin(pid, labtest.GoneLimit) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("server %d outlived its SIGKILLed runner", pid)
		}
	}
}

// The output of `sweep run` goes away: an SSH session without a terminal
// closes its pipes and sends no hangup. The next line the run writes meets
// a broken pipe, which must stop it like a hangup and tear down, not kill
// it before its teardown.
func TestSweepRunOutputGoneTearsDown(t *testing.T) {
	t.Parallel()
	campaign, profiles := teardownCampaignOf(t, "local", false, noSave, "1s", 30)
	out := filepath.Join(t.TempDir(), "run")
	rd, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r := startSweepRunTo(t, wr, campaign, out, "--profiles", profiles)
	wr.Close()
	go func() { _, _ = io.Copy(io.Discard, rd) }()
	servers := r.untilServing(t)
	rd.Close() // the session is gone
	r.end(t, 130)
	r.nothingLeft(t, servers)
	run, err := sweeps.ReadRun(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Cells) >= 30 {
		t.Errorf("%d cells ran: the run went on after its output went away", len(run.Cells))
	}
}
