package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/lab/resp"
)

// Container starts an official server image on a host through the host's
// command runner, the way the reference study did:
//
//	docker run --network host --cpuset-cpus 8-23 --ulimit nofile=32768:65536 \
//	  valkey/valkey:<v> --save '' --appendonly no --io-threads 16 \
//	  --protected-mode no --maxmemory 60gb
//
// with --detach and --name added so the lifecycle can be driven. Readiness,
// facts and shutdown go through `docker exec … <kind>-cli`. Docker does not
// run on linerate's development machines: this path runs on cloud hosts
// only, and its tests replay a recorded command sequence.
type Container struct {
	Host  infra.Runner
	Image string // e.g. valkey/valkey:9.1.0
	Name  string // container name; default linerate-<kind>-<port>
	// HostAddr is the address clients use to reach the host, and the
	// server's bind when the settings name none; default the bind, and
	// 127.0.0.1 when neither is given.
	HostAddr string
	NoFile   string // --ulimit nofile; default 32768:65536, as the study ran
	Docker   string // docker command; default docker
	LogDir   string // where the container log is copied; default settings.LogDir or a temp dir
	// Poll is the readiness poll interval; default 200ms.
	Poll time.Duration
}

// fill gives settings left empty the image's kind and version and the
// bind. An image runs with host networking and (as the study ran it)
// protected mode off, so it always binds one address: without it, it
// would serve every interface of the host, a public one included.
func (c *Container) fill(s infra.ServerSettings) infra.ServerSettings {
	if s.Kind == "" {
		s.Kind = kindOfImage(c.Image)
	}
	if s.Version == "" {
		s.Version = versionOfImage(c.Image)
	}
	if s.Bind == "" {
		s.Bind = c.HostAddr
	}
	if s.Bind == "" {
		s.Bind = "127.0.0.1"
	}
	return s
}

// RunArgv is the docker run command for settings s.
func (c *Container) RunArgv(s infra.ServerSettings) ([]string, error) {
	if c.Image == "" {
		return nil, errors.New("container image: empty (e.g. valkey/valkey:9.1.0)")
	}
	s = c.fill(s)
	if s.TLS {
		// The certificates would have to be made on the host and mounted
		// into the container, and readiness asked with valkey-cli --tls.
		return nil, fmt.Errorf("%w: tls with a container image: not built (store versions and binaries serve TLS)", infra.ErrUnsupportedSetting)
	}
	args, err := s.Args()
	if err != nil {
		return nil, err
	}
	argv := []string{c.docker(), "run", "--detach", "--name", c.name(s), "--network", "host"}
	if s.CPUs != "" {
		argv = append(argv, "--cpuset-cpus", s.CPUs)
	}
	argv = append(argv, "--ulimit", "nofile="+c.nofile())
	for _, e := range s.Env {
		argv = append(argv, "--env", e)
	}
	argv = append(argv, c.Image)
	return append(argv, args...), nil
}

func (c *Container) docker() string {
	if c.Docker != "" {
		return c.Docker
	}
	return "docker"
}

func (c *Container) nofile() string {
	if c.NoFile != "" {
		return c.NoFile
	}
	return "32768:65536"
}

// ContainerName is the name the container for settings s gets.
func (c *Container) ContainerName(s infra.ServerSettings) string { return c.name(c.fill(s)) }

func (c *Container) name(s infra.ServerSettings) string {
	if c.Name != "" {
		return c.Name
	}
	return fmt.Sprintf("linerate-%s-%d", s.KindOrDefault(), port(s))
}

func port(s infra.ServerSettings) int {
	if s.Port == 0 {
		return 6379
	}
	return s.Port
}

// kindOfImage guesses the kind from an image name (valkey/valkey:9.1.0).
func kindOfImage(image string) infra.Kind {
	name := image
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name = name[:i]
	}
	name = strings.ToLower(name[strings.LastIndexByte(name, '/')+1:])
	for _, k := range infra.Kinds {
		if strings.Contains(name, string(k)) {
			return k
		}
	}
	return infra.Valkey
}

// versionOfImage takes a dotted version tag (9.1.0, 8.1-alpine → 8.1).
func versionOfImage(image string) string {
	i := strings.LastIndexByte(image, ':')
	if i < 0 || i < strings.LastIndexByte(image, '/') {
		return ""
	}
	tag := image[i+1:]
	if j := strings.IndexByte(tag, '-'); j >= 0 {
		tag = tag[:j]
	}
	for _, p := range strings.Split(tag, ".") {
		if _, err := strconv.Atoi(p); err != nil {
			return ""
		}
	}
	return tag
}

func cliOf(k infra.Kind) (string, error) {
	switch k {
	case infra.Valkey:
		return "valkey-cli", nil
	case infra.Redis:
		return "redis-cli", nil
	case infra.KeyDB:
		return "keydb-cli", nil
	}
	return "", fmt.Errorf("container launcher: %s images carry no CLI to check readiness with; start %s with the binary launcher", k, k)
}

// Start implements infra.Launcher.
func (c *Container) Start(ctx context.Context, s infra.ServerSettings) (infra.Server, error) {
	if c.Host == nil {
		return nil, errors.New("container launcher: no host runner")
	}
	s = c.fill(s)
	argv, err := c.RunArgv(s)
	if err != nil {
		return nil, err
	}
	cli, err := cliOf(s.KindOrDefault())
	if err != nil {
		return nil, err
	}
	logDir := c.LogDir
	if logDir == "" {
		logDir = s.LogDir
	}
	if logDir == "" {
		if logDir, err = os.MkdirTemp("", "linerate-container-"); err != nil {
			return nil, err
		}
	}
	name := c.name(s)
	srv := &containerServer{c: c, name: name, settings: s, cli: cli, logPath: filepath.Join(logDir, "server.log"),
		done: make(chan struct{}), exited: make(chan infra.Exit, 1)}
	host := c.HostAddr
	if host == "" {
		host = s.Bind
	}
	srv.facts = infra.ServerFacts{Argv: argv, Addr: net.JoinHostPort(host, strconv.Itoa(port(s))), StartedAt: time.Now(),
		Identity: infra.ServerIdentity{Kind: s.KindOrDefault(), Version: s.Version, Build: c.Image, Source: "image", Env: s.Env}}
	// A container left by an earlier run under the same name would make
	// docker run fail; it is ours, so remove it.
	_, _ = c.Host.Run(ctx, c.docker(), "rm", "--force", name)
	if _, err := c.Host.Run(ctx, argv...); err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Image, err)
	}
	go srv.watch()
	if err := srv.ready(ctx); err != nil {
		srv.keepLog(context.Background())
		_ = srv.Stop(context.Background())
		return nil, err
	}
	srv.facts.ReadyAfter = time.Since(srv.facts.StartedAt)
	if err := srv.capture(ctx); err != nil {
		srv.keepLog(context.Background())
		_ = srv.Stop(context.Background())
		return nil, err
	}
	return srv, nil
}

type containerServer struct {
	c        *Container
	name     string
	cli      string
	settings infra.ServerSettings
	logPath  string
	facts    infra.ServerFacts

	mu       sync.Mutex
	stopping bool
	done     chan struct{}
	exited   chan infra.Exit
}

func (s *containerServer) Addr() string              { return s.facts.Addr }
func (s *containerServer) Facts() infra.ServerFacts  { return s.facts }
func (s *containerServer) Exited() <-chan infra.Exit { return s.exited }
func (s *containerServer) LogPath() string           { return s.logPath }

// cliArgv is docker exec <name> <cli> -h <bind> -p <port> [auth] args…:
// the server listens on its bind address only.
func (s *containerServer) cliArgv(args ...string) []string {
	host := s.settings.Bind
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	a := []string{s.c.docker(), "exec", s.name, s.cli, "-h", host, "-p", strconv.Itoa(port(s.settings))}
	if s.settings.User != nil {
		a = append(a, "--user", s.settings.User.Name, "--pass", s.settings.User.Password, "--no-auth-warning")
	} else if s.settings.RequirePass != "" {
		a = append(a, "-a", s.settings.RequirePass, "--no-auth-warning")
	}
	return append(a, args...)
}

// watch blocks in `docker wait` and reports an end nobody asked for.
func (s *containerServer) watch() {
	out, err := s.c.Host.Run(context.Background(), s.c.docker(), "wait", s.name)
	e := infra.Exit{Code: -1, Err: err}
	if err == nil {
		if n, perr := strconv.Atoi(strings.TrimSpace(string(out))); perr == nil {
			e.Code = n
			if n > 128 && n < 160 {
				e.Signal = "signal " + strconv.Itoa(n-128) // docker reports 128+signal
				if n == 137 {
					e.Signal = "SIGKILL"
				}
			}
		}
	}
	s.mu.Lock()
	e.Expected = s.stopping
	s.mu.Unlock()
	if !e.Expected {
		s.keepLog(context.Background())
		e.LogTail = tail(s.logPath, 20)
	}
	// done first, as localServer's: a Stop on the report finds it gone.
	close(s.done)
	if !e.Expected {
		s.exited <- e
	}
	close(s.exited)
}

// keepLog copies the container's log to LogPath for the record.
func (s *containerServer) keepLog(ctx context.Context) {
	out, err := s.c.Host.Run(ctx, s.c.docker(), "logs", s.name)
	if err == nil {
		_ = os.WriteFile(s.logPath, out, 0o644)
	}
}

func (s *containerServer) ready(ctx context.Context) error {
	timeout := s.settings.StartTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	poll := s.c.Poll
	if poll <= 0 {
		poll = 200 * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		out, err := s.c.Host.Run(ctx, s.cliArgv("PING")...)
		if err == nil && strings.TrimSpace(string(out)) == "PONG" {
			return nil
		}
		last = err
		select {
		case <-s.done:
			return fmt.Errorf("start %s: %w; log tail:\n%s", s.c.Image, ErrExitedEarly, tail(s.logPath, 20))
		case <-ctx.Done():
			s.keepLog(context.Background())
			return fmt.Errorf("start %s: %w after %s: %v; log tail:\n%s", s.c.Image, ErrNotReady, timeout, last, tail(s.logPath, 20))
		case <-time.After(poll):
		}
	}
}

func (s *containerServer) capture(ctx context.Context) error {
	info, err := s.c.Host.Run(ctx, s.cliArgv("INFO", "server")...)
	if err != nil {
		return fmt.Errorf("capture INFO server from %s: %w", s.name, err)
	}
	s.facts.InfoServer = resp.ParseInfo(string(info))
	mem, err := s.c.Host.Run(ctx, s.cliArgv("INFO", "memory")...)
	if err != nil {
		return fmt.Errorf("capture INFO memory from %s: %w", s.name, err)
	}
	s.facts.InfoMemory = resp.ParseInfo(string(mem))
	s.facts.Config = map[string]string{}
	for _, k := range infra.ConfigKeys {
		out, err := s.c.Host.Run(ctx, s.cliArgv("CONFIG", "GET", k)...)
		lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
		if err == nil && len(lines) >= 2 {
			s.facts.Config[k] = lines[1]
		}
	}
	if pid, err := s.c.Host.Run(ctx, s.c.docker(), "inspect", "--format", "{{.State.Pid}}", s.name); err == nil {
		s.facts.PID, _ = strconv.Atoi(strings.TrimSpace(string(pid)))
	}
	if v := ReportedVersion(s.facts.InfoServer); v != "" {
		if s.settings.Version != "" && v != s.settings.Version && !strings.HasPrefix(v, s.settings.Version+".") {
			return fmt.Errorf("start %s: it reports version %s, expected %s", s.c.Image, v, s.settings.Version)
		}
		s.facts.Identity.Version = v
	}
	return nil
}

// Stop implements infra.Server: SHUTDOWN NOSAVE, then docker stop (SIGTERM,
// then SIGKILL after the timeout), then the container is removed after its
// log is kept.
func (s *containerServer) Stop(ctx context.Context) error {
	s.mu.Lock()
	already := s.stopping
	s.stopping = true
	s.mu.Unlock()
	if already {
		<-s.done
		return nil
	}
	step := s.settings.StopTimeout
	if step <= 0 {
		step = 5 * time.Second
	}
	var errs []error
	select {
	case <-s.done:
	default:
		_, _ = s.c.Host.Run(ctx, s.cliArgv("SHUTDOWN", "NOSAVE")...) // the connection closing is the answer
		t := time.NewTimer(step)
		select {
		case <-s.done:
		case <-t.C:
			if _, err := s.c.Host.Run(ctx, s.c.docker(), "stop", "--time", strconv.Itoa(int(step.Seconds())), s.name); err != nil {
				errs = append(errs, err)
			}
			errs = append(errs, fmt.Errorf("SHUTDOWN NOSAVE did not end it within %s", step))
		}
		t.Stop()
	}
	s.keepLog(ctx)
	if _, err := s.c.Host.Run(ctx, s.c.docker(), "rm", "--force", s.name); err != nil {
		errs = append(errs, err)
	}
	<-s.done
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("stop container %s: %w", s.name, err)
	}
	return nil
}

// ExecRunner runs commands on this host; a remote host's runner (SSH)
// has the same shape.
type ExecRunner struct{}

// Run implements infra.Runner.
func (ExecRunner) Run(ctx context.Context, argv ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("run %s: %w: %s", strings.Join(argv, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return out, nil
}
