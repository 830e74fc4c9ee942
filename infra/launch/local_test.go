package launch

import (
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/debpkg"
	"github.com/linerate/linerate/infra/kernel"
	"github.com/linerate/linerate/lab/cpus"
	"github.com/linerate/linerate/lab/labtest"
)

// systemRedis is the bookworm redis-server .ci/setup installs: the "any
// binary the user names" case.
func systemRedis(t *testing.T) string {
	p, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("redis-server missing; .ci/setup installs it")
		}
		t.Skip("redis-server missing (install redis-server from bookworm, or run make setup)")
	}
	p, _ = filepath.EvalSymlinks(p)
	// Run it by the name it is known by, so /proc shows redis-server.
	link := filepath.Join(t.TempDir(), "redis-server")
	if err := os.Symlink(p, link); err != nil {
		t.Fatal(err)
	}
	return link
}

func lastCPU() string { return strconv.Itoa(runtime.NumCPU() - 1) }

func TestLocalPinnedStartStop(t *testing.T) {
	bin := systemRedis(t)
	l := &Local{Binary: bin, Identity: infra.ServerIdentity{Kind: infra.Redis, Source: "path", Build: bin}}
	ctx := context.Background()
	self, err := ThreadAffinity(kernel.FS{}, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	ownCPUs := self[0].CPUs
	srv, err := l.Start(ctx, infra.ServerSettings{CPUs: lastCPU(), IOThreads: 2, MaxMemory: "100mb", LogDir: t.TempDir(),
		Env: []string{"MALLOC_CONF=oversize_threshold:0"}})
	if err != nil {
		t.Fatal(err)
	}
	f := srv.Facts()
	if !strings.HasPrefix(f.Identity.Version, "7.") || f.Config["maxmemory"] != "104857600" || f.Config["io-threads"] != "2" {
		t.Errorf("facts: version %q maxmemory %q io-threads %q", f.Identity.Version, f.Config["maxmemory"], f.Config["io-threads"])
	}
	if len(f.Threads) < 2 {
		t.Errorf("threads = %+v, want the main thread and more", f.Threads)
	}
	for _, th := range f.Threads {
		if th.CPUs != lastCPU() {
			t.Errorf("thread %s/%d on %s, want %s", th.Name, th.TID, th.CPUs, lastCPU())
		}
	}
	if f.Threads[0].Name != "redis-server" {
		t.Errorf("main thread is named %q, want redis-server", f.Threads[0].Name)
	}
	// (The environment is not read back from /proc: Redis rewrites its
	// process title over the environ area.)
	if len(f.Identity.Env) != 1 {
		t.Errorf("identity env = %v", f.Identity.Env)
	}
	// Our own threads were not narrowed by the pinning trick.
	own, err := ThreadAffinity(kernel.FS{}, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for _, th := range own {
		if th.CPUs != ownCPUs {
			t.Errorf("test thread %d is on %s after the start, was on %s", th.TID, th.CPUs, ownCPUs)
		}
	}
	if err := srv.Stop(ctx); err != nil {
		t.Errorf("stop: %v", err)
	}
	if _, open := <-srv.Exited(); open {
		t.Error("a clean stop was reported as unexpected")
	}
	if err := syscallKill0(f.PID); err == nil {
		t.Error("server still running after Stop")
	}
}

func syscallKill0(pid int) error {
	p, _ := os.FindProcess(pid)
	return p.Signal(syscallZero)
}

func TestLocalFaults(t *testing.T) {
	bin := systemRedis(t)
	ctx := context.Background()
	l := &Local{Binary: bin}

	t.Run("port in use", func(t *testing.T) {
		port := listening(t)
		_, err := l.Start(ctx, infra.ServerSettings{Kind: infra.Redis, Port: port})
		if !errors.Is(err, ErrPortInUse) || !strings.Contains(err.Error(), strconv.Itoa(port)) {
			t.Errorf("err = %v, want ErrPortInUse naming %d", err, port)
		}
	})
	t.Run("cpus the host lacks", func(t *testing.T) {
		_, err := l.Start(ctx, infra.ServerSettings{Kind: infra.Redis, CPUs: "4000"})
		if err == nil || !strings.Contains(err.Error(), "this host has") {
			t.Errorf("err = %v, want it to say which CPUs the host has", err)
		}
	})
	t.Run("exits at start", func(t *testing.T) {
		_, err := l.Start(ctx, infra.ServerSettings{Kind: infra.Redis, Extra: []string{"--no-such-directive", "1"}, LogDir: t.TempDir()})
		if !errors.Is(err, ErrExitedEarly) || !strings.Contains(err.Error(), "no-such-directive") {
			t.Errorf("err = %v, want ErrExitedEarly with the log tail naming the bad directive", err)
		}
	})
	t.Run("wrong architecture", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "valkey-server")
		if err := os.WriteFile(p, fakeELF(elf.EM_AARCH64), 0o755); err != nil {
			t.Fatal(err)
		}
		if runtime.GOARCH == "arm64" {
			t.Skip("this fixture is for the host's own architecture here")
		}
		_, err := (&Local{Binary: p}).Start(ctx, infra.ServerSettings{})
		if !errors.Is(err, debpkg.ErrWrongArch) {
			t.Errorf("err = %v, want ErrWrongArch", err)
		}
	})
	t.Run("setting the version lacks", func(t *testing.T) {
		yes := true
		_, err := (&Local{Binary: bin, Identity: infra.ServerIdentity{Kind: infra.Valkey, Version: "8.1.1"}}).Start(ctx, infra.ServerSettings{IOThreadsDoReads: &yes})
		if !errors.Is(err, infra.ErrUnsupportedSetting) {
			t.Errorf("err = %v, want ErrUnsupportedSetting", err)
		}
	})
}

func TestLocalReportsKill(t *testing.T) {
	bin := systemRedis(t)
	// Kind unsaid: the identity takes it from INFO.
	srv, err := (&Local{Binary: bin}).Start(context.Background(), infra.ServerSettings{LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if k := srv.Facts().Identity.Kind; k != infra.Redis {
		t.Errorf("identity kind = %q, want redis", k)
	}
	p, _ := os.FindProcess(srv.Facts().PID)
	p.Kill()
	select {
	case e := <-srv.Exited():
		if e.Expected || e.Signal != "SIGKILL" || !strings.Contains(e.LogTail, "Ready to accept") {
			t.Errorf("exit = %+v, want unexpected SIGKILL with log tail", e)
		}
		// Once reported, the server is gone for Stop too.
		select {
		case <-srv.(*localServer).done:
		default:
			t.Error("the exit was reported before the server counted as gone")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SIGKILL not reported")
	}
	if err := srv.Stop(context.Background()); err != nil {
		t.Errorf("stop after kill: %v", err)
	}
}

func TestThreadAffinityFixture(t *testing.T) {
	root := t.TempDir()
	for tid, st := range map[string]string{
		"100": "Name:\tvalkey-server\nCpus_allowed_list:\t8-23\n",
		"101": "Name:\tio_thd_1\nCpus_allowed_list:\t8-23\n",
		"102": "Name:\tbio_aof\nCpus_allowed_list:\t0-31\n",
	} {
		d := filepath.Join(root, "proc", "100", "task", tid)
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "status"), []byte(st), 0o644)
	}
	th, err := ThreadAffinity(kernel.FS{Root: root}, 100)
	if err != nil || len(th) != 3 || th[0].Name != "valkey-server" {
		t.Fatalf("threads = %+v, %v", th, err)
	}
	err = CheckPinned(th, cpus.Must("8-23"))
	if err == nil || !strings.Contains(err.Error(), "bio_aof/102 on 0-31") {
		t.Errorf("CheckPinned = %v, want it to name bio_aof", err)
	}
	if err := CheckPinned(th[:2], cpus.Must("8-23")); err != nil {
		t.Errorf("CheckPinned(pinned threads) = %v", err)
	}
}

func fakeELF(m elf.Machine) []byte {
	h := make([]byte, 64)
	copy(h, "\x7fELF")
	h[4], h[5], h[6] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), 1
	binary.LittleEndian.PutUint16(h[16:], uint16(elf.ET_DYN))
	binary.LittleEndian.PutUint16(h[18:], uint16(m))
	binary.LittleEndian.PutUint32(h[20:], 1)
	binary.LittleEndian.PutUint16(h[52:], 64)
	binary.LittleEndian.PutUint16(h[54:], 56)
	binary.LittleEndian.PutUint16(h[58:], 64)
	return h
}

// A server that ignores SHUTDOWN is ended by SIGTERM, and Stop says so.
func TestLocalStopEscalates(t *testing.T) {
	bin := systemRedis(t)
	srv, err := (&Local{Binary: bin}).Start(context.Background(), infra.ServerSettings{Kind: infra.Redis, LogDir: t.TempDir(),
		StopTimeout: 300 * time.Millisecond, Extra: []string{"--rename-command", "SHUTDOWN", ""}})
	if err != nil {
		t.Fatal(err)
	}
	err = srv.Stop(context.Background())
	if err == nil || !strings.Contains(err.Error(), "SIGTERM did") {
		t.Errorf("stop = %v, want the SIGTERM escalation reported", err)
	}
	if _, open := <-srv.Exited(); open {
		t.Error("a stop was reported as an unexpected exit")
	}
}

// requirepass and an ACL user: the launcher authenticates to check and
// capture, as the ACL user when there is one.
func TestLocalAuth(t *testing.T) {
	bin := systemRedis(t)
	for _, s := range []infra.ServerSettings{
		{Kind: infra.Redis, RequirePass: "pw1"},
		{Kind: infra.Redis, User: &infra.ACLUser{Name: "bench", Password: "pw2"}},
	} {
		s.LogDir = t.TempDir()
		srv, err := (&Local{Binary: bin}).Start(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if srv.Facts().InfoServer["redis_version"] == "" {
			t.Errorf("no INFO captured with %+v", s)
		}
		if err := srv.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	}
}

// A port the launcher picked can be taken before the server binds it
// (another test, another campaign on the machine: the kernel hands the
// same free ports to anyone who asks). The launcher then picks another
// and starts again; it never takes the stranger on the port for its own
// server. Two strangers: one that only listens (the server cannot bind)
// and a running redis (whose PING the readiness probe may reach first).
func TestLocalPicksAnotherPortWhenItsPickIsTaken(t *testing.T) {
	bin := systemRedis(t)
	stranger := labtest.StartRedis(t)
	for _, taken := range []int{listening(t), stranger.Port} {
		picks := 0
		l := &Local{Binary: bin, pickPort: func(n *NetPlace, bind string) (int, error) {
			picks++
			if picks == 1 {
				return taken, nil
			}
			return freePortIn(n, bind)
		}}
		srv, err := l.Start(context.Background(), infra.ServerSettings{Kind: infra.Redis, LogDir: t.TempDir()})
		if err != nil {
			t.Fatalf("port %d taken: %v", taken, err)
		}
		f := srv.Facts()
		if picks != 2 || f.Addr == net.JoinHostPort("127.0.0.1", strconv.Itoa(taken)) || f.InfoServer["process_id"] != strconv.Itoa(f.PID) {
			t.Errorf("port %d taken: %d picks, server at %s answering as process %s, started %d", taken, picks, f.Addr, f.InfoServer["process_id"], f.PID)
		}
		if err := srv.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}
	if !labtest.Runs(stranger.Cmd.Process.Pid) {
		t.Error("the stranger on the taken port was stopped")
	}
}

// Stop asks only its own server to SHUTDOWN: a process that did not bind
// its port, with another server answering there, is ended by signal and
// the other is left running.
func TestStopLeavesTheStrangerOnItsPort(t *testing.T) {
	stranger := labtest.StartRedis(t)
	cmd := exec.Command("sleep", "60") // ours: alive, bound to nothing
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	srv := &localServer{cmd: cmd, done: make(chan struct{}), exited: make(chan infra.Exit, 1), logPath: filepath.Join(t.TempDir(), "log"),
		settings: infra.ServerSettings{StopTimeout: 5 * time.Second},
		facts:    infra.ServerFacts{PID: cmd.Process.Pid, Addr: stranger.Addr, Argv: []string{"sleep"}}}
	go srv.wait()
	err := srv.Stop(context.Background())
	if err == nil || !strings.Contains(err.Error(), "answers as process "+strconv.Itoa(stranger.Cmd.Process.Pid)) ||
		!strings.Contains(err.Error(), "not asked to SHUTDOWN") || strings.Contains(err.Error(), "no control connection") {
		t.Errorf("Stop: %v; want it to name the stranger's process, say it was not asked to SHUTDOWN and that SIGTERM ended ours", err)
	}
	if labtest.Runs(cmd.Process.Pid) || !labtest.Runs(stranger.Cmd.Process.Pid) {
		t.Errorf("ours runs: %v, the stranger runs: %v; want only the stranger", labtest.Runs(cmd.Process.Pid), labtest.Runs(stranger.Cmd.Process.Pid))
	}
}

// A pick that stays taken ends the start after a few tries, saying so.
func TestLocalGivesUpOnPortsThatStayTaken(t *testing.T) {
	bin := systemRedis(t)
	taken := listening(t)
	picks := 0
	l := &Local{Binary: bin, pickPort: func(*NetPlace, string) (int, error) { picks++; return taken, nil }}
	_, err := l.Start(context.Background(), infra.ServerSettings{Kind: infra.Redis, LogDir: t.TempDir()})
	if !errors.Is(err, ErrPortInUse) || picks != portPicks {
		t.Errorf("%d picks, err = %v; want %d picks and ErrPortInUse", picks, err, portPicks)
	}
}

// listening is a loopback port a listener of the test holds (accepting
// nothing) until the test ends.
func listening(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}
