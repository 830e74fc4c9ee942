package launch

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/linerate/linerate/lab/cpus"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/debpkg"
	"github.com/linerate/linerate/infra/kernel"
	"github.com/linerate/linerate/lab/resp"
	"github.com/linerate/linerate/lab/tlsgen"
)

// Errors a caller can tell apart.
var (
	ErrPortInUse   = errors.New("port in use")
	ErrExitedEarly = errors.New("server exited during start")
	ErrNotReady    = errors.New("server did not become ready")
)

// Local starts a server binary on this host. Binary is a version from the
// store (servers.Store.Launcher builds one) or any build the user names.
// The binary is executed by its own path, so the process and its main
// thread carry its file name (valkey-server), which per-thread CPU
// attribution relies on.
type Local struct {
	Binary   string               // absolute path of the server executable
	Identity infra.ServerIdentity // what records say ran; Kind/Version fill settings left empty
	Kernel   kernel.FS            // where the server's /proc is read; zero: this host
	// Net, when set, runs the server in another network namespace of this
	// machine (the netns provider's server host); nil: this one's.
	Net *NetPlace

	// pickPort chooses the port when the settings leave it to the
	// launcher; nil: freePortIn (tests hand out a taken one).
	pickPort func(n *NetPlace, bind string) (int, error)
}

// portPicks is how many ports a start tries when the ones it picked are
// taken before the server binds them.
const portPicks = 3

// NetPlace is a network namespace as a launcher needs it: how to start a
// process inside, and how to reach and probe ports from inside.
type NetPlace struct {
	Wrap   []string // argv prefix, e.g. ip netns exec NAME
	Dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	Listen func(network, addr string) (net.Listener, error)
}

// NetPlaceOf is where a launcher starts servers on h and reaches them:
// inside h's network namespace; nil is this process's own.
func NetPlaceOf(h infra.Entered) *NetPlace {
	wrap := h.Enter()
	if wrap == nil {
		return nil
	}
	return &NetPlace{Wrap: wrap, Dial: h.DialContext, Listen: h.Listen}
}

func (n *NetPlace) listen(network, addr string) (net.Listener, error) {
	if n == nil || n.Listen == nil {
		return net.Listen(network, addr)
	}
	return n.Listen(network, addr)
}

// Start implements infra.Launcher. A port it picked (the settings name
// none) that is taken before the server binds it is picked again, up to
// portPicks times: the kernel hands the same free ports to anyone who
// asks, and the port is free only until the server binds it.
func (l *Local) Start(ctx context.Context, s infra.ServerSettings) (infra.Server, error) {
	for pick := 1; ; pick++ {
		srv, err := l.start(ctx, s)
		if err == nil || s.Port != 0 || !errors.Is(err, ErrPortInUse) || ctx.Err() != nil {
			return srv, err
		}
		if pick == portPicks {
			return nil, fmt.Errorf("%d ports picked, each taken before the server bound it; the last: %w", pick, err)
		}
	}
}

func (l *Local) start(ctx context.Context, s infra.ServerSettings) (infra.Server, error) {
	kindGiven := s.Kind != "" || l.Identity.Kind != ""
	if err := l.settle(&s); err != nil {
		return nil, err
	}
	logDir, stls, err := l.serverFiles(&s)
	if err != nil {
		return nil, err
	}
	args, err := s.Args()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(logDir, "server.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", l.Binary, err)
	}
	defer logf.Close()
	srv := &localServer{
		cmd: l.command(s, args, logDir, logf), settings: s, logPath: logPath, done: make(chan struct{}), exited: make(chan infra.Exit, 1),
		kernel: l.Kernel, net: l.Net,
	}
	if stls != nil {
		if srv.tls, err = stls.ClientConfig(); err != nil {
			return nil, fmt.Errorf("start %s: %w", l.Binary, err)
		}
	}
	cpus, _ := s.PinCPUs() // Validate parsed them
	started := time.Now()
	if err := startHeld(srv.cmd, cpus, srv.done); err != nil {
		return nil, fmt.Errorf("start %s: %w", l.Binary, err)
	}
	id := l.Identity
	id.Env = append(append([]string(nil), id.Env...), s.Env...)
	if id.Kind == "" {
		id.Kind = s.KindOrDefault()
	}
	id.BinarySHA = fileSHA256(l.Binary)
	srv.facts = infra.ServerFacts{Identity: id, Argv: append([]string{l.Binary}, args...), PID: srv.cmd.Process.Pid,
		Addr: net.JoinHostPort(s.Bind, strconv.Itoa(s.Port)), StartedAt: started, TLS: stls}
	go srv.wait()
	if err := l.checkStarted(ctx, srv, s, cpus, kindGiven); err != nil {
		_ = srv.Stop(context.Background())
		return nil, err
	}
	return srv, nil
}

// settle fills what s leaves to the launcher (kind, version, address,
// a free port) and refuses what cannot start: bad settings, a binary for
// another machine, a port in use, server arguments that do not form.
func (l *Local) settle(s *infra.ServerSettings) error {
	if s.Kind == "" {
		s.Kind = l.Identity.Kind
	}
	if s.Version == "" {
		s.Version = l.Identity.Version
	}
	if s.Bind == "" {
		s.Bind = "127.0.0.1"
	}
	if err := s.Validate(); err != nil {
		return err
	}
	if err := debpkg.CheckBinary(l.Binary, debpkg.DpkgArch(runtime.GOARCH)); err != nil {
		return fmt.Errorf("start %s: %w", l.Binary, err)
	}
	if s.Port == 0 {
		pick := l.pickPort
		if pick == nil {
			pick = freePortIn
		}
		p, err := pick(l.Net, s.Bind)
		if err != nil {
			return err
		}
		s.Port = p
	} else if err := portFree(l.Net, s.Bind, s.Port); err != nil {
		return err
	}
	// Refused before a log directory or certificate is made; the
	// certificate files are only named once they exist.
	probe := *s
	if probe.TLS && probe.TLSFiles == nil {
		probe.TLSFiles = &tlsgen.Files{}
	}
	_, err := probe.Args()
	return err
}

// serverFiles makes the server's log directory (a temporary one when s
// names none) and, for TLS, its certificates there.
func (l *Local) serverFiles(s *infra.ServerSettings) (logDir string, stls *infra.ServerTLS, err error) {
	logDir = s.LogDir
	if logDir == "" {
		if logDir, err = os.MkdirTemp("", "linerate-server-"); err != nil {
			return "", nil, fmt.Errorf("start %s: log dir: %w", l.Binary, err)
		}
	}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return "", nil, fmt.Errorf("start %s: log dir: %w", l.Binary, err)
	}
	if s.TLS {
		if stls, err = serverTLS(s, logDir); err != nil {
			return "", nil, fmt.Errorf("start %s: %w", l.Binary, err)
		}
	}
	return logDir, stls, nil
}

// command is the server's process, in the launcher's network namespace
// when it has one, writing into logf.
func (l *Local) command(s infra.ServerSettings, args []string, logDir string, logf *os.File) *exec.Cmd {
	argv := append([]string{l.Binary}, args...)
	if l.Net != nil {
		// ip netns exec execs the server: the PID stays the server's.
		argv = append(append([]string(nil), l.Net.Wrap...), argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = logDir // anything the server writes (dump files) stays beside the log
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), s.Env...)
	// Its own process group: the operator's Ctrl-C reaches linerate, which
	// then stops the server cleanly, not the server first. SIGKILL when
	// linerate dies without stopping it (kill -9, a crash): a server must
	// not outlive its runner (startHeld keeps the forking thread alive).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// checkStarted waits for the started server to answer, reads its facts
// and checks it is what was asked: pinned to cpus, of the version s
// names; the kind it reports is its identity's unless one was given.
func (l *Local) checkStarted(ctx context.Context, srv *localServer, s infra.ServerSettings, cpus []int, kindGiven bool) error {
	started := srv.facts.StartedAt
	if err := srv.ready(ctx, s); err != nil {
		return err
	}
	srv.facts.ReadyAfter = time.Since(started)
	if err := srv.capture(ctx); err != nil {
		return err
	}
	if len(cpus) > 0 {
		if err := CheckPinned(srv.facts.Threads, cpus); err != nil {
			return fmt.Errorf("start %s: %w", l.Binary, err)
		}
	}
	reported := ReportedVersion(srv.facts.InfoServer)
	if s.Version != "" && reported != "" && reported != s.Version {
		return fmt.Errorf("start %s: it reports version %s, expected %s", l.Binary, reported, s.Version)
	}
	if srv.facts.Identity.Version == "" {
		srv.facts.Identity.Version = reported
	}
	if !kindGiven {
		srv.facts.Identity.Kind = KindFromInfo(srv.facts.InfoServer)
	}
	return nil
}

// startHeld starts cmd from a goroutine locked to an OS thread of its
// own, with the CPU affinity cpus when given (the child inherits it from
// its first instruction, and every thread it makes does too; the thread's
// own mask is put back right after the fork), and keeps that thread until
// held is closed (the child has been reaped): PR_SET_PDEATHSIG fires when
// the thread that forked the child ends, not the process, and Go ends a
// thread whose goroutine exits locked (netns.Host.Do does that) or may
// reuse a pooled one that way. The thread, pinned or not, is then
// discarded rather than returned to Go's pool. It only waits; the reaping
// is an ordinary goroutine's.
func startHeld(cmd *exec.Cmd, cpus cpus.List, held <-chan struct{}) error {
	var set *unix.CPUSet
	if len(cpus) > 0 {
		set = new(unix.CPUSet)
		set.Zero()
		for _, c := range cpus {
			set.Set(c)
		}
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		var orig unix.CPUSet
		if set != nil {
			if err := unix.SchedGetaffinity(0, &orig); err != nil {
				errc <- fmt.Errorf("read thread affinity: %w", err)
				return
			}
			if err := unix.SchedSetaffinity(0, set); err != nil {
				errc <- fmt.Errorf("pin to cpus %s (this host has %d CPUs, 0-%d): %w", cpus, runtime.NumCPU(), runtime.NumCPU()-1, err)
				return
			}
		}
		err := cmd.Start()
		if set != nil {
			// Waiting is no work for the server's CPUs; and a thread of
			// linerate narrowed to them would look like pinning gone wrong.
			_ = unix.SchedSetaffinity(0, &orig)
		}
		errc <- err
		if err == nil {
			<-held
		}
	}()
	return <-errc
}

// FreePort asks the kernel for a free TCP port on bind.
func FreePort(bind string) (int, error) { return freePortIn(nil, bind) }

func freePortIn(n *NetPlace, bind string) (int, error) {
	ln, err := n.listen("tcp", net.JoinHostPort(bind, "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free port on %s: %w", bind, err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func portFree(n *NetPlace, bind string, port int) error {
	ln, err := n.listen("tcp", net.JoinHostPort(bind, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("%w: %s:%d (%v); pick another port or stop what listens there", ErrPortInUse, bind, port, err)
	}
	return ln.Close()
}

func fileSHA256(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

type localServer struct {
	cmd      *exec.Cmd
	settings infra.ServerSettings
	logPath  string
	kernel   kernel.FS
	net      *NetPlace
	tls      *tls.Config // a TLS-only server's; nil for plain TCP
	facts    infra.ServerFacts

	mu       sync.Mutex
	stopping bool
	exit     infra.Exit
	done     chan struct{} // closed when the process has been reaped
	exited   chan infra.Exit
}

func (s *localServer) Addr() string              { return s.facts.Addr }
func (s *localServer) Facts() infra.ServerFacts  { return s.facts }
func (s *localServer) Exited() <-chan infra.Exit { return s.exited }
func (s *localServer) LogPath() string           { return s.logPath }

// wait reaps the process and reports an end nobody asked for.
func (s *localServer) wait() {
	err := s.cmd.Wait()
	e := infra.Exit{Code: s.cmd.ProcessState.ExitCode(), Err: err}
	if ws, ok := s.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		e.Signal = unix.SignalName(ws.Signal())
		if e.Signal == "" {
			e.Signal = ws.Signal().String()
		}
	}
	s.mu.Lock()
	e.Expected = s.stopping
	s.mu.Unlock()
	if !e.Expected {
		e.LogTail = tail(s.logPath, 20)
	}
	s.mu.Lock()
	s.exit = e
	s.mu.Unlock()
	// done closes before the report: a Stop called on the report must
	// find the process gone, not ask a dead server to SHUTDOWN (the
	// other order failed TestLocalReportsKill once in a full run).
	close(s.done)
	if !e.Expected {
		s.exited <- e
	}
	close(s.exited)
}

// dial opens a control connection to the server. Its replies are read
// within bounds (lab/resp): a server that answers with nonsense is an
// error naming it, never a crash or a huge allocation here.
func (s *localServer) dial(ctx context.Context, timeout time.Duration) (*resp.Conn, error) {
	opt := resp.Options{DialTimeout: timeout, Password: s.settings.RequirePass, TLS: s.tls}
	if s.net != nil && s.net.Dial != nil {
		opt.Dial = s.net.Dial
	}
	if s.settings.User != nil {
		opt.User, opt.Password = s.settings.User.Name, s.settings.User.Password
	}
	return resp.Dial(ctx, s.facts.Addr, opt)
}

// ready polls PING until the server answers, it exits, or the start
// timeout passes. Something that answers PING with a malformed reply is
// not a server starting up: that ends the wait at once.
func (s *localServer) ready(ctx context.Context, set infra.ServerSettings) error {
	timeout := set.StartTimeout
	if timeout <= 0 {
		timeout = 15 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for delay := 10 * time.Millisecond; ; delay = min(delay*2, 200*time.Millisecond) {
		select {
		case <-s.done:
			return s.exitedEarly()
		default:
		}
		if last = s.ping(ctx); last == nil {
			return nil
		}
		// A certificate the run's CA did not sign will not be signed by
		// waiting either.
		var cert *tls.CertificateVerificationError
		if errors.Is(last, resp.ErrMalformed) || errors.As(last, &cert) {
			return fmt.Errorf("start %s: %w", s.facts.Argv[0], last)
		}
		select {
		case <-s.done:
			continue // reported at the top of the loop
		case <-ctx.Done():
			return fmt.Errorf("start %s: %w after %s: %v; log tail:\n%s", s.facts.Argv[0], ErrNotReady, timeout, last, tail(s.logPath, 20))
		case <-time.After(delay):
		}
	}
}

// exitedEarly says how the server ended before it answered; a server
// whose port was taken says so in its log ("Address already in use",
// Redis, Valkey and Go's words alike), and that is ErrPortInUse too.
func (s *localServer) exitedEarly() error {
	log := tail(s.logPath, 20)
	err := fmt.Errorf("start %s: %w (%s); log tail:\n%s", s.facts.Argv[0], ErrExitedEarly, s.exit, log)
	if strings.Contains(strings.ToLower(log), "address already in use") {
		return fmt.Errorf("%w: %w", ErrPortInUse, err)
	}
	return err
}

// ping is one readiness probe, bounded on its own so a server that
// accepts but does not answer yet is asked again.
func (s *localServer) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := s.dial(ctx, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Text(ctx, "PING")
	return err
}

// capture records INFO server, INFO memory, the effective configuration
// and every thread's CPU list.
func (s *localServer) capture(ctx context.Context) error {
	c, err := s.dial(ctx, 5*time.Second)
	if err != nil {
		return fmt.Errorf("capture facts: %w", err)
	}
	defer c.Close()
	info, err := c.Text(ctx, "INFO", "server")
	if err != nil {
		return fmt.Errorf("capture facts: %w", err)
	}
	s.facts.InfoServer = resp.ParseInfo(info)
	if err := s.ours(s.facts.InfoServer); err != nil {
		return err
	}
	mem, err := c.Text(ctx, "INFO", "memory")
	if err != nil {
		return fmt.Errorf("capture facts: %w", err)
	}
	s.facts.InfoMemory = resp.ParseInfo(mem)
	s.facts.Config = map[string]string{}
	var se *resp.ServerError
	for _, k := range infra.ConfigKeys {
		// One key per call: multi-key CONFIG GET is Redis 7+ only.
		m, err := c.Pairs(ctx, "CONFIG", "GET", k)
		if errors.As(err, &se) {
			continue // the version refuses the setting
		}
		if err != nil {
			return fmt.Errorf("capture facts: %w", err)
		}
		for name, v := range m { // none when the version lacks the setting
			if name == k || len(m) == 1 {
				s.facts.Config[k] = v
			}
		}
	}
	threads, err := ThreadAffinity(s.kernel, s.facts.PID)
	if err != nil {
		return err
	}
	s.facts.Threads = threads
	return nil
}

// ours checks that the server answering on the port is the process
// started, when it names its process (INFO server process_id): another
// that bound the port first (it was free when picked) would otherwise be
// measured, and stopped, as this one.
func (s *localServer) ours(info map[string]string) error {
	if pid, ok := info["process_id"]; ok && pid != strconv.Itoa(s.facts.PID) {
		return fmt.Errorf("%w: %s answers as process %s, not the started %d", ErrPortInUse, s.facts.Addr, pid, s.facts.PID)
	}
	return nil
}

// Stop implements infra.Server.
func (s *localServer) Stop(ctx context.Context) error {
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
	select {
	case <-s.done:
		return nil
	default:
	}
	step := s.settings.StopTimeout
	if step <= 0 {
		step = 5 * time.Second
	}
	sctx, cancel := context.WithTimeout(ctx, step)
	c, derr := s.dial(sctx, time.Second)
	stranger := false
	if derr == nil {
		// Never SHUTDOWN a stranger: a server that did not bind its port
		// may still be running while another answers there.
		if derr = s.askedOurs(sctx, c); derr == nil {
			_, _ = c.Do(sctx, "SHUTDOWN", "NOSAVE") // the connection closing is the answer
		} else {
			stranger = true
		}
		c.Close()
	}
	cancel()
	// Without a control connection (a server that never became ready, a
	// certificate the launcher does not trust) nothing was asked: no wait.
	if derr == nil && s.waitDone(ctx, step) {
		return nil
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	if s.waitDone(ctx, step) {
		switch {
		case stranger:
			return fmt.Errorf("stop %s: not asked to SHUTDOWN NOSAVE (%v); SIGTERM ended the started process", s.facts.Addr, derr)
		case derr != nil:
			return fmt.Errorf("stop %s: no control connection for SHUTDOWN NOSAVE (%v); SIGTERM ended it", s.facts.Addr, derr)
		}
		return fmt.Errorf("stop %s: SHUTDOWN NOSAVE did not end it within %s; SIGTERM did", s.facts.Addr, step)
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	return fmt.Errorf("stop %s: neither SHUTDOWN NOSAVE nor SIGTERM ended it; killed; log at %s", s.facts.Addr, s.logPath)
}

// askedOurs asks who answers on c and says whether it is another
// process. A server that does not answer INFO (an ACL that forbids it)
// cannot tell, and is asked to SHUTDOWN as before.
func (s *localServer) askedOurs(ctx context.Context, c *resp.Conn) error {
	info, err := c.Text(ctx, "INFO", "server")
	if err != nil {
		return nil
	}
	return s.ours(resp.ParseInfo(info))
}

func (s *localServer) waitDone(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.done:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

// serverTLS makes the run's throwaway CA and server certificate, for the
// bind address, under logDir/tls, unless s names certificate files
// already, makes the files' paths absolute, and says how to trust the
// server.
func serverTLS(s *infra.ServerSettings, logDir string) (*infra.ServerTLS, error) {
	if s.TLSFiles == nil {
		opt := tlsgen.Options{Name: "linerate " + string(s.KindOrDefault())}
		if ip := net.ParseIP(s.Bind); ip != nil {
			opt.IPs = []net.IP{ip}
		} else {
			opt.DNSNames = []string{s.Bind}
		}
		b, err := tlsgen.Generate(opt)
		if err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
		f, err := b.Write(filepath.Join(logDir, "tls"))
		if err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
		s.TLSFiles = &f
	}
	// The server runs inside its log directory: a path relative to ours
	// (an agent's default log directory is) would point below it there.
	abs := *s.TLSFiles
	for _, p := range []*string{&abs.CA, &abs.ServerCert, &abs.ServerKey, &abs.ClientCert, &abs.ClientKey} {
		if *p != "" {
			a, err := filepath.Abs(*p)
			if err != nil {
				return nil, fmt.Errorf("tls: %w", err)
			}
			*p = a
		}
	}
	s.TLSFiles = &abs
	ca, err := os.ReadFile(s.TLSFiles.CA)
	if err != nil {
		return nil, fmt.Errorf("tls: the CA certificate: %w", err)
	}
	return &infra.ServerTLS{CAFile: s.TLSFiles.CA, CA: ca, ServerName: s.Bind}, nil
}
