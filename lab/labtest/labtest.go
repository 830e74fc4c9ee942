// Package labtest starts real servers for tests: redis-server from Debian's
// packages (installed by .ci/setup) on a free loopback port, and the
// linerate binary built from this checkout.
package labtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linerate/linerate/lab/cluster"
	"github.com/linerate/linerate/lab/resp"
)

// Need fails the test when a tool is missing in CI, and skips it with the
// reason elsewhere: in CI a missing dependency is a failure, never a skip.
func Need(t testing.TB, tool string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not installed; .ci/setup installs it (make setup)", tool)
	}
	t.Skipf("%s is not installed; run make setup", tool)
	return ""
}

// Runs says whether pid is a live process. A zombie does not count: a
// killed process whose parent died is reaped by whoever inherits it, in
// its own time.
func Runs(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && !strings.HasPrefix(s[i+1:], " Z") && !strings.HasPrefix(s[i+1:], " X")
}

// GoneLimit is how long a test waits for a process that was told to go
// (killed, its parent dead): past any freeze as well; one that is gone
// ends the wait at once.
const GoneLimit = PacedQueueLimit

// GoneWithin waits up to d for pid to stop running (Runs) and says
// whether it did.
func GoneWithin(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for Runs(pid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	return !Runs(pid)
}

// Server is a redis-server started for one test.
type Server struct {
	Port int
	Addr string
	Cmd  *exec.Cmd
	Log  string
	done chan struct{}
}

// FreePort returns a loopback port that was free a moment ago.
//
// The port is drawn below the kernel's ephemeral range when there is room
// (ip_local_port_range; 32768 on Debian): the kernel hands ephemeral
// ports to every listen on port 0 and every outgoing connection, so one of
// those could take the port between FreePort and the server's bind, and
// the server's readiness dial then reach another test's listener (a
// clean-clone make test saw a TLS server test and a test's never-to-be-
// spoken-to listener meet on one port).
func FreePort(t testing.TB) int {
	t.Helper()
	if low := ephemeralLow(); low > freePortFloor+1000 {
		for range 200 {
			p := freePortFloor + rand.IntN(low-freePortFloor)
			if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p)); err == nil {
				l.Close()
				return p
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// PacedQueueLimit is the queue limit of a paced test run: past any freeze
// of a process under make test (1-2.5 s seen on 2 vCPUs), so a paced
// window never drops requests or calls its rate unsustainable because
// the machine, not the code, stalled.
const PacedQueueLimit = 30 * time.Second

// RequestTimeout is a test run's request timeout where the test does not
// judge timeouts: past any freeze as well, so a stalled process never
// turns a request into an error and a reconnect (a 2 s timeout once gave
// a one-connection run a second connection under make test). A test whose
// timeout detects a reply that never comes still sees it: the request
// times out inside the drain, which lasts its timeout.
const RequestTimeout = PacedQueueLimit

// freePortFloor is the lowest port FreePort draws: above the ports
// services commonly own.
const freePortFloor = 10000

// ephemeralLow is the low end of the kernel's ephemeral port range (0
// when it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0
	}
	low, _ := strconv.Atoi(f[0])
	return low
}

// StartRedis starts redis-server on loopback with persistence off and
// stops it when the test ends. Extra args are appended ("--requirepass", "x").
func StartRedis(t testing.TB, extra ...string) *Server {
	t.Helper()
	return StartServer(t, Need(t, "redis-server"), extra...)
}

// StartServer starts a Redis-compatible server binary (valkey-server,
// redis-server, a store build) the same way.
func StartServer(t testing.TB, bin string, extra ...string) *Server {
	t.Helper()
	return StartServerEnv(t, bin, nil, extra...)
}

// StartServerEnv is StartServer with extra environment (e.g. MALLOC_CONF).
func StartServerEnv(t testing.TB, bin string, env []string, extra ...string) *Server {
	t.Helper()
	return StartServerWith(t, bin, env, func(int) []string { return extra })
}

// StartServerWith is StartServerEnv with arguments that depend on the
// port the server is given (a TLS-only server: --port 0 --tls-port PORT
// and its certificate files). Readiness is a TCP connection to the port,
// which a TLS port accepts too.
func StartServerWith(t testing.TB, bin string, env []string, extra func(port int) []string) *Server {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "server.log")
	s := startOnFreePort(t, bin, env, log, func(port int) []string {
		return append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", dir, "--logfile", log, "--protected-mode", "no"}, extra(port)...)
	})
	if s == nil {
		t.Fatalf("redis-server did not start; log:\n%s", tail(log))
	}
	return s
}

// StartSink starts `linerate sink` (bin) on loopback, on a free port,
// with extra arguments and environment, and stops it when the test ends
// (or at Stop).
func StartSink(t testing.TB, bin string, env []string, extra ...string) *Server {
	t.Helper()
	s := startOnFreePort(t, bin, env, "", func(port int) []string {
		return append([]string{"sink", "--bind", "127.0.0.1", "-p", strconv.Itoa(port)}, extra...)
	})
	if s == nil {
		t.Fatalf("linerate sink %v did not start", extra)
	}
	return s
}

// startOnFreePort starts bin with args on a free loopback port and waits
// until the port accepts, three ports at most (another process may take
// one between FreePort and the bind); nil if none did.
func startOnFreePort(t testing.TB, bin string, env []string, log string, args func(port int) []string) *Server {
	t.Helper()
	for attempt := 0; attempt < 3; attempt++ {
		port := FreePort(t)
		s := &Server{Port: port, Addr: "127.0.0.1:" + strconv.Itoa(port), Log: log, done: make(chan struct{})}
		s.Cmd = exec.Command(bin, args(port)...)
		s.Cmd.Env = append(os.Environ(), env...)
		if err := s.Cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", bin, err)
		}
		go func() { _ = s.Cmd.Wait(); close(s.done) }()
		if waitReady(s.Addr, s.done, 5*time.Second) {
			t.Cleanup(s.Stop)
			return s
		}
		s.Stop()
	}
	return nil
}

func waitReady(addr string, done chan struct{}, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return false
		default:
		}
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// Kill sends SIGKILL and waits for the process to go.
func (s *Server) Kill() {
	_ = s.Cmd.Process.Kill()
	<-s.done
}

// Stop ends the server if it still runs.
func (s *Server) Stop() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.Cmd.Process.Kill()
	<-s.done
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(string(b), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// BinaryEnv names a linerate binary built from this tree for every test
// package to share (`make test` builds it once); unset, each test process
// builds its own.
const BinaryEnv = "LINERATE_TEST_BINARY"

// EmulatorEnv names the emulator the tests run under (.ci/arm64 sets it
// to qemu-user). Under it, the process's page faults and CPU time are the
// emulator's as much as the code's: it translates code into pages of its
// own as the run goes.
const EmulatorEnv = "LINERATE_EMULATOR"

// Emulator returns $LINERATE_EMULATOR: "" when the tests run natively.
func Emulator() string { return os.Getenv(EmulatorEnv) }

// Binary builds cmd/linerate once per test process and returns its path,
// or returns $LINERATE_TEST_BINARY's.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(BinaryEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("$%s: %v", BinaryEnv, err)
		}
		return p
	}
	buildOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		dir, err := os.MkdirTemp("", "linerate-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "linerate")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/linerate")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// Info reads an INFO section (stats, commandstats) on a connection of its
// own, so tests can check the client's counts against the server's own.
func Info(t testing.TB, addr, section string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := resp.Dial(ctx, addr, resp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.Text(ctx, "INFO", section)
	if err != nil {
		t.Fatal(err)
	}
	return resp.ParseInfo(s)
}

// WaitForCalls waits until the server at addr has answered at least n of
// cmd (commandstats; lowercase, as "set"), polling every 10 ms for up to
// limit, and fails the test past it. A test that acts "mid-run" acts on
// the run's progress, not after a sleep that a busy machine may outrun.
// Call it from the test's own goroutine.
func WaitForCalls(t testing.TB, addr, cmd string, n uint64, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	var calls uint64
	for {
		calls = 0
		for _, f := range strings.Split(Info(t, addr, "commandstats")["cmdstat_"+cmd], ",") {
			if v, ok := strings.CutPrefix(f, "calls="); ok {
				calls, _ = strconv.ParseUint(v, 10, 64)
			}
		}
		if calls >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s answered %d %s calls in %s; waited for %d", addr, calls, cmd, limit, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// FakeDocker is a fresh copy of sweeps/start/testdata/fake-docker in a
// directory of its own (it keeps its state beside itself): docker's
// command line for launch.Container on machines without docker.
func FakeDocker(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	src, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "sweeps", "start", "testdata", "fake-docker"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "docker")
	if err := os.WriteFile(p, src, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

var distOnce struct {
	sync.Once
	dir string
	err error
}

// Dist is a directory laid out as `make dist` leaves it, holding this
// build for this machine's architecture (linerate-linux-<arch>): what the
// ssh and aws hosts upload.
func Dist(t testing.TB) string {
	t.Helper()
	bin := Binary(t)
	distOnce.Do(func() {
		// A folder of this process's own: the binary may be shared by
		// test processes running side by side.
		if distOnce.dir, distOnce.err = os.MkdirTemp("", "linerate-dist"); distOnce.err == nil {
			link := filepath.Join(distOnce.dir, "linerate-linux-"+runtime.GOARCH)
			os.Remove(link)
			distOnce.err = os.Symlink(bin, link)
		}
	})
	if distOnce.err != nil {
		t.Fatal(distOnce.err)
	}
	return distOnce.dir
}

// Within fails the test when f has not returned within limit: a parser
// that loops over a hostile range would otherwise hang the whole run. The
// goroutine is left behind on failure; the test binary ends soon after.
func Within(t testing.TB, limit time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("still running after %s", limit)
	}
}

// StartCluster starts n cluster-enabled servers of bin on loopback and
// forms them into one cluster (cluster.Form: node i serves
// cluster.Ranges(n)[i]); every server stops when the test ends.
func StartCluster(t testing.TB, bin string, n int) []*Server {
	t.Helper()
	servers := make([]*Server, n)
	conns := make([]*resp.Conn, n)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range servers {
		// The bus named: port+10000, its default, is refused past 55535.
		servers[i] = StartServerWith(t, bin, nil, func(int) []string {
			return []string{"--cluster-enabled", "yes", "--cluster-node-timeout", "5000", "--cluster-port", strconv.Itoa(FreePort(t))}
		})
		c, err := resp.Dial(ctx, servers[i].Addr, resp.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	if err := cluster.Form(ctx, conns); err != nil {
		t.Fatal(err)
	}
	return servers
}

// LoopbackPair is a connected TCP pair on loopback, both ends closed when
// the test ends: the dialling end and the accepted one.
func LoopbackPair(t testing.TB) (dialled, accepted *net.TCPConn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	d, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	a, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return d.(*net.TCPConn), a.(*net.TCPConn)
}
