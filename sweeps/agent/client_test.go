package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/netns"
	"github.com/linerate/linerate/infra/sshhost"
	"github.com/linerate/linerate/infra/sshhost/sshtest"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/hostbench"
)

// sshConfig reaches h's sshd in the lab as root with the lab's key.
func sshConfig(t *testing.T, l *sshtest.Lab, h infra.Host, label, known string) sshhost.Config {
	return sshhost.Config{Label: label, Addr: l.Addr(h), User: "root", Signer: l.ClientKey, KnownHosts: known,
		DataAddr: h.DataAddr(), Dist: labtest.Dist(t), Dial: l.Dial}
}

// sysctlIn reads a sysctl inside a namespace.
func sysctlIn(t *testing.T, h infra.Host, name string) string {
	t.Helper()
	ns := netns.Of(h).Namespace
	out, err := exec.Command("ip", "netns", "exec", ns, "cat", "/proc/sys/"+strings.ReplaceAll(name, ".", "/")).Output()
	if err != nil {
		t.Fatalf("read %s in %s: %v", name, ns, err)
	}
	return strings.TrimSpace(string(out))
}

// somaxconnProfile tunes one per-namespace sysctl to v on the server's
// veth: a change the tests can see, which leaves the machine untouched.
func somaxconnProfile(v string) []byte {
	return []byte("nic_address: 198.18.0.1\nirqbalance: leave\nsysctls: {net.core.somaxconn: \"" + v + "\"}\n")
}

// redisBinary is Debian's redis-server, which .ci/setup installs.
func redisBinary(t *testing.T) string {
	t.Helper()
	return labtest.Need(t, "redis-server")
}

// alive says whether pid is still a process (all namespaces of this test
// share one PID namespace).
func alive(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == nil }

// agentsRunning lists processes running `linerate agent` in the hosts'
// network namespaces: agents of other tests (other packages run at the
// same time) are not this test's to count or kill.
func agentsRunning(t *testing.T, hosts ...infra.Host) []string {
	t.Helper()
	mine := map[string]bool{}
	for _, h := range hosts {
		st, err := os.Stat(filepath.Join(netns.RunDir, netns.Of(h).Namespace))
		if err != nil {
			t.Fatal(err)
		}
		mine[fmt.Sprintf("net:[%d]", st.Sys().(*syscall.Stat_t).Ino)] = true
	}
	var found []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		ns, _ := os.Readlink(filepath.Join("/proc", e.Name(), "ns", "net"))
		if strings.Contains(string(b), "\x00agent\x00--state-dir\x00") && mine[ns] {
			found = append(found, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
}

// The coordinator's connection drops mid-run (a crash, a network fault):
// the agent's input ends, so it stops its server; the reconnected session
// is a fresh agent, and the server is reported gone, never silently lost.
func TestAgentStopsServerWhenConnectionDrops(t *testing.T) {
	t.Parallel()
	bin := redisBinary(t)
	l := sshtest.New(t, "e2e-drop")
	dir := t.TempDir()
	h, err := sshhost.New(sshConfig(t, l, l.Pair.Server, "server", filepath.Join(dir, "known_hosts")))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	agent := &AgentClient{Host: h}
	defer agent.Close(context.Background())
	st := &RemoteStarter{Agent: agent}
	ctx := context.Background()
	pv := sweeps.PlanVersion{Spec: sweeps.VersionSpec{Binary: bin, Label: "drop"}, Segment: "drop"}
	srv, err := st.Start(ctx, pv, "")
	if err != nil {
		t.Fatal(err)
	}
	info, _ := srv.Info(ctx)
	pid, _ := strconv.Atoi(info["process_id"])
	if host, _ := srv.Addr(); host != "198.18.0.1" || !alive(pid) {
		t.Fatalf("server at %s, pid %d alive %v", host, pid, alive(pid))
	}
	if err := srv.FlushAll(ctx); err != nil {
		t.Fatal(err)
	}
	h.Close() // the connection goes away under the agent's session
	select {
	case err := <-srv.Exited():
		if err == nil || !strings.Contains(err.Error(), "agent on server") {
			t.Errorf("exit report %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the server's loss was never reported")
	}
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if alive(pid) {
		t.Errorf("server pid %d outlived its agent's session", pid)
	}
	if err := srv.FlushAll(ctx); err == nil {
		t.Error("flushall of a lost server succeeded")
	}
	// The next block gets a fresh agent on a new connection.
	again, err := st.Start(ctx, pv, "")
	if err != nil {
		t.Fatalf("start after the drop: %v", err)
	}
	if err := again.FlushAll(ctx); err != nil {
		t.Error(err)
	}
	if err := again.Stop(ctx); err != nil {
		t.Error(err)
	}
	if err := srv.Stop(ctx); err != nil {
		t.Errorf("stop of the lost server: %v", err)
	}
}

// An image version, as the study's campaign names them, started by the
// agent on the server host through the container launcher. Docker does not
// run here, so testdata/fake-docker plays it with the Debian redis-server
// (the tag is that binary's version). The server binds the host's data
// address only (host networking and protected mode off would otherwise
// serve every interface), the client host reaches it there, the agent
// finds its PID with docker inspect and samples its threads, and Stop ends
// it.
func TestImageVersionThroughAgent(t *testing.T) {
	t.Parallel()
	bin := redisBinary(t)
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`v=([0-9][0-9A-Za-z.+-]*)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("redis-server --version: %s", out)
	}
	image := "redis:" + string(m[1])
	l := sshtest.New(t, "e2e-image")
	fake := labtest.FakeDocker(t)
	dir := filepath.Dir(fake)
	known := filepath.Join(t.TempDir(), "known_hosts")
	var hosts [2]*sshhost.Host
	for i, h := range []infra.Host{l.Pair.Server, l.Pair.Client} {
		if hosts[i], err = sshhost.New(sshConfig(t, l, h, []string{"server", "client"}[i], known)); err != nil {
			t.Fatal(err)
		}
		defer hosts[i].Close()
	}
	agent := &AgentClient{Host: hosts[0], Args: []string{"--docker", fake}}
	defer agent.Close(context.Background())
	ctx := context.Background()
	st := &RemoteStarter{Agent: agent}
	vs := sweeps.VersionSpec{Image: image, Label: "img", Server: sweeps.ServerSettings{IOThreads: 2}}
	res, err := st.Resolve(ctx, vs)
	if err != nil || res.Name != "redis" || res.Version != string(m[1]) {
		t.Fatalf("resolve %s: %+v %v", image, res, err)
	}
	srv, err := st.Start(ctx, sweeps.PlanVersion{Spec: vs, Segment: res.Segment(), Resolved: &res}, "")
	if err != nil {
		t.Fatal(err)
	}
	info, _ := srv.Info(ctx)
	pid, _ := strconv.Atoi(info["process_id"])
	if host, port := srv.Addr(); host != "198.18.0.1" || port != 6379 || !alive(pid) || info["config:io-threads"] != "2" {
		t.Fatalf("server at %s:%d, pid %d, io-threads %q", host, port, pid, info["config:io-threads"])
	}
	argv, _ := os.ReadFile(filepath.Join(dir, "state", "linerate-redis-6379.argv"))
	if !strings.Contains(string(argv), "\n--bind\n198.18.0.1\n") {
		t.Errorf("docker run without --bind 198.18.0.1:\n%s", argv)
	}
	if c, err := l.Pair.Server.(infra.Entered).DialContext(ctx, "tcp", "127.0.0.1:6379"); err == nil {
		c.Close()
		t.Error("the image version also serves the server host's loopback: it is not bound to the data address alone")
	}
	// A 3 s window: make test was seen to freeze a process for 1-2.5 s, and the live GETs checked below must complete in it.
	w := lab.Workload{Host: "198.18.0.1", Port: 6379, Connections: 2, Threads: 1, Keyspace: 4, ValueSz: lab.OneSize(256 << 10),
		Ratio: lab.Ratio{Gets: 100}, Prefill: true, Warmup: lab.Duration(200 * time.Millisecond), Duration: lab.Duration(3 * time.Second)}.Resolve()
	var ticks []*lab.Live // the remote bench's live totals, read off its stderr
	rec, err := hostbench.HostBencher{Host: hosts[1], Live: func(l *lab.Live) { ticks = append(ticks, l) }}.Bench(ctx, w, nil)
	if err != nil || rec.Stop.Reason != lab.StopCompleted {
		t.Fatalf("bench from the client host: %v %+v", err, rec)
	}
	if len(ticks) == 0 || !ticks[len(ticks)-1].Final {
		t.Errorf("%d live ticks from the client host, the last not final", len(ticks))
	} else if c := ticks[len(ticks)-1].Count(lab.PhaseMeasure, lab.OpGet); c == nil || c.PayloadBytes != rec.Ops[lab.OpGet].PayloadBytes {
		t.Errorf("live window bytes %+v, record %d", c, rec.Ops[lab.OpGet].PayloadBytes)
	}
	snap, err := srv.(sweeps.HostSampler).SnapshotHost(ctx)
	if err != nil || snap.Proc == nil || snap.Proc.PID != pid || len(snap.Proc.Threads) < 2 {
		t.Fatalf("agent snapshot of pid %d: %+v %v", pid, snap, err)
	}
	if err := srv.FlushAll(ctx); err != nil {
		t.Error(err)
	}
	if err := srv.Stop(ctx); err != nil {
		t.Error(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if alive(pid) {
		t.Errorf("server pid %d runs after Stop", pid)
	}
}

// The connection under a tuned host's agent drops: that agent reverts when
// its input ends, so the next check tunes the host again through a fresh
// agent and counts the gap as a drift, instead of failing every later cell.
func TestTuningSurvivesADroppedAgent(t *testing.T) {
	t.Parallel()
	l := sshtest.New(t, "e2e-retune")
	h, err := sshhost.New(sshConfig(t, l, l.Pair.Server, "server", filepath.Join(t.TempDir(), "known_hosts")))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	a := &AgentClient{Host: h}
	defer a.Close(context.Background())
	before := sysctlIn(t, l.Pair.Server, "net.core.somaxconn")
	tu := &RemoteTuner{Agents: map[string]*AgentClient{"server": a},
		Profile: somaxconnProfile("1414")}
	ctx := context.Background()
	if _, err := tu.Apply(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if _, drifts, err := tu.Verify(ctx); err != nil || drifts != 0 {
		t.Fatalf("right after apply: %d drifts, %v", drifts, err)
	}
	h.Close()
	// The old agent sees its input end and reverts.
	deadline := time.Now().Add(10 * time.Second)
	for sysctlIn(t, l.Pair.Server, "net.core.somaxconn") != before && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if got := sysctlIn(t, l.Pair.Server, "net.core.somaxconn"); got != before {
		t.Fatalf("the dropped agent left somaxconn at %s", got)
	}
	rep, drifts, err := tu.Verify(ctx)
	if err != nil || drifts != 1 {
		t.Fatalf("check after the drop: %d drifts, %v, %s", drifts, err, rep)
	}
	if got := sysctlIn(t, l.Pair.Server, "net.core.somaxconn"); got != "1414" {
		t.Errorf("not tuned again: somaxconn %s", got)
	}
	if _, drifts, err := tu.Verify(ctx); err != nil || drifts != 0 {
		t.Errorf("the check after that: %d drifts, %v", drifts, err)
	}
	if err := tu.Revert(ctx); err != nil {
		t.Fatal(err)
	}
	if got := sysctlIn(t, l.Pair.Server, "net.core.somaxconn"); got != before {
		t.Errorf("after revert: somaxconn %s, want %s", got, before)
	}
}

// An agent killed outright cannot revert: its snapshot stays on the host,
// and the next apply there reverts it first, so the final revert restores
// the true originals and not the values the dead agent had set.
func TestLeftoverSnapshotIsRevertedFirst(t *testing.T) {
	t.Parallel()
	l := sshtest.New(t, "e2e-leftover")
	h, err := sshhost.New(sshConfig(t, l, l.Pair.Server, "server", filepath.Join(t.TempDir(), "known_hosts")))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ctx := context.Background()
	before := sysctlIn(t, l.Pair.Server, "net.core.somaxconn")
	first := &AgentClient{Host: h}
	tu := &RemoteTuner{Agents: map[string]*AgentClient{"server": first}, Profile: somaxconnProfile("1515")}
	if _, err := tu.Apply(ctx, ""); err != nil {
		t.Fatal(err)
	}
	for _, a := range agentsRunning(t, l.Pair.Server) {
		pid, _ := strconv.Atoi(strings.SplitN(a, ":", 2)[0])
		syscall.Kill(pid, syscall.SIGKILL)
	}
	first.Close(ctx)
	if got := sysctlIn(t, l.Pair.Server, "net.core.somaxconn"); got != "1515" {
		t.Fatalf("after the kill: somaxconn %s, want 1515 left behind", got)
	}
	second := &AgentClient{Host: h}
	defer second.Close(ctx)
	tu2 := &RemoteTuner{Agents: map[string]*AgentClient{"server": second}, Profile: somaxconnProfile("1616")}
	if _, err := tu2.Apply(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if err := tu2.Revert(ctx); err != nil {
		t.Fatal(err)
	}
	if got := sysctlIn(t, l.Pair.Server, "net.core.somaxconn"); got != before {
		t.Errorf("after the second run's revert: somaxconn %s, want the original %s", got, before)
	}
}

// Two agents on one host: an earlier one still alive (its connection half
// open, say) while a fresh one is asked to tune. The fresh one asks the old
// one to end, which reverts first, so the fresh snapshot holds the true
// originals and the old agent cannot undo the new tuning later.
func TestNewAgentTakesOverTheTuningOfAnOldOne(t *testing.T) {
	t.Parallel()
	l := sshtest.New(t, "e2e-takeover")
	known := filepath.Join(t.TempDir(), "known_hosts")
	var hosts [2]*sshhost.Host
	for i := range hosts {
		h, err := sshhost.New(sshConfig(t, l, l.Pair.Server, "server", known))
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		hosts[i] = h
	}
	ctx := context.Background()
	before := sysctlIn(t, l.Pair.Server, "net.core.somaxconn")
	old := &AgentClient{Host: hosts[0]}
	defer old.Close(ctx)
	if _, err := (&RemoteTuner{Agents: map[string]*AgentClient{"server": old}, Profile: somaxconnProfile("1717")}).Apply(ctx, ""); err != nil {
		t.Fatal(err)
	}
	fresh := &AgentClient{Host: hosts[1]}
	defer fresh.Close(ctx)
	tu := &RemoteTuner{Agents: map[string]*AgentClient{"server": fresh}, Profile: somaxconnProfile("1818")}
	if _, err := tu.Apply(ctx, ""); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the old agent is gone: nothing of it may come later
	if got := sysctlIn(t, l.Pair.Server, "net.core.somaxconn"); got != "1818" {
		t.Errorf("somaxconn %s while the fresh agent's tuning holds, want 1818", got)
	}
	if _, _, err := old.call(ctx, factsRequest{}, old.sess); !errors.Is(err, errSessionGone) {
		t.Errorf("the old agent still answers: %v", err)
	}
	if err := tu.Revert(ctx); err != nil {
		t.Fatal(err)
	}
	if got := sysctlIn(t, l.Pair.Server, "net.core.somaxconn"); got != before {
		t.Errorf("after the fresh agent's revert: somaxconn %s, want the original %s", got, before)
	}
}
