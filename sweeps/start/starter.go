// Package start starts the server versions of a plan with infra's
// launchers: it resolves a version spec to the exact version cell IDs
// name (store selectors, binary paths, images), starts it with the
// campaign's server settings (an image watched, so a killed starter
// leaves no container) and answers for it while it runs; ReapOrphans
// stops what a killed runner's servers left. A coordinator starts its
// servers here, and a `linerate agent` on each remote host.
package start

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/kernel"
	"github.com/linerate/linerate/infra/launch"
	"github.com/linerate/linerate/infra/servers"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/control"
	"github.com/linerate/linerate/lab/resp"
	"github.com/linerate/linerate/sweeps"
)

// Starter starts campaign versions with infra's launchers. It also resolves
// selectors to exact versions for cell IDs.
type Starter struct {
	// StoreDir is the server-version store ("" = $LINERATE_HOME or the
	// default cache directory), opened on first use.
	StoreDir string
	// Docker runs docker for image versions; default launch.ExecRunner{}.
	Docker infra.Runner
	// DockerCommand is the docker command; default "docker" (podman
	// takes the same arguments).
	DockerCommand string
	// StartTimeout bounds one server start; 0 = the launcher's default.
	StartTimeout time.Duration
	// Net and Bind place servers in another network namespace of this
	// machine (the netns provider's server host) at its data address;
	// nil and "": this host's own network and loopback.
	Net  *launch.NetPlace
	Bind string
	// Install installs a store version that is missing instead of failing
	// (the agent on a remote host: nobody prepared its store by hand).
	Install bool

	once  sync.Once
	store *servers.Store
	err   error
}

func (s *Starter) servers() (*servers.Store, error) {
	s.once.Do(func() { s.store, s.err = servers.Open(s.StoreDir) })
	return s.store, s.err
}

// Resolve implements sweeps.Resolver: the exact version a spec will run.
func (s *Starter) Resolve(ctx context.Context, v sweeps.VersionSpec) (sweeps.Resolved, error) {
	switch {
	case v.Store != "":
		inst, err := s.installed(ctx, v)
		if err != nil {
			return sweeps.Resolved{}, err
		}
		return sweeps.Resolved{Name: string(inst.Kind), Version: inst.Version}, nil
	case v.Image != "":
		kind, ver := imageVersion(v.Image)
		if ver == "" {
			return sweeps.Resolved{}, fmt.Errorf("image %s: the tag is not a version; add label:", v.Image)
		}
		return sweeps.Resolved{Name: string(kind), Version: ver}, nil
	}
	return binaryVersion(ctx, v.Binary)
}

func (s *Starter) installed(ctx context.Context, v sweeps.VersionSpec) (*servers.Installed, error) {
	st, err := s.servers()
	if err != nil {
		return nil, err
	}
	sel, err := servers.ParseSelector(v.Store)
	if err != nil {
		return nil, err
	}
	inst, err := st.Find(sel, v.Runtime)
	if errors.Is(err, servers.ErrNotInstalled) && s.Install {
		return st.Install(ctx, sel, servers.InstallOptions{Runtime: v.Runtime})
	}
	return inst, err
}

// Settings maps a campaign version to launcher settings. Persistence is
// the campaign's (none when it says nothing, as the study ran); protected
// mode stays off (infra's zero value).
func Settings(pv sweeps.PlanVersion, logDir string) infra.ServerSettings {
	sp := pv.Spec.Server
	st := infra.ServerSettings{
		IOThreads:   sp.IOThreads,
		MaxMemory:   sp.MaxMemory,
		Persistence: infra.Persistence(sp.Persistence),
		TLS:         sp.TLS,
		StopTimeout: sp.StopTimeout.D(),
		Extra:       append([]string(nil), sp.Args...),
		LogDir:      logDir,
	}
	if len(sp.CPUs) > 0 {
		st.CPUs = sp.CPUs.String()
	}
	keys := make([]string, 0, len(pv.Spec.Env))
	for k := range pv.Spec.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		st.Env = append(st.Env, k+"="+pv.Spec.Env[k])
	}
	if pv.Resolved != nil {
		st.Kind, st.Version = infra.Kind(pv.Resolved.Name), pv.Resolved.Version
	}
	return st
}

// Start implements sweeps.ServerStarter: StartAt the starter's Bind.
func (s *Starter) Start(ctx context.Context, pv sweeps.PlanVersion, logDir string) (sweeps.RunningServer, error) {
	return s.StartAt(ctx, pv, logDir, s.Bind)
}

// StartAt starts a version bound to bind ("": loopback). The agent binds
// each server to the address its coordinator names, so one Starter serves
// every request without being changed.
func (s *Starter) StartAt(ctx context.Context, pv sweeps.PlanVersion, logDir, bind string) (sweeps.RunningServer, error) {
	dir := filepath.Join(logDir, pv.Segment+"-"+time.Now().UTC().Format("20060102T150405.000Z"))
	set := Settings(pv, dir)
	set.StartTimeout = s.StartTimeout
	// Images too: they run with host networking and protected mode off,
	// so without the bind they would serve every interface of the host.
	set.Bind = bind
	var l infra.Launcher
	v := pv.Spec
	switch {
	case v.Store != "":
		inst, err := s.installed(ctx, v)
		if err != nil {
			return nil, err
		}
		local := inst.Launcher()
		local.Net = s.Net
		l = local
	case v.Image != "":
		r := s.Docker
		if r == nil {
			r = launch.ExecRunner{}
		}
		c := &launch.Container{Host: r, Image: v.Image, LogDir: dir, Docker: s.DockerCommand}
		if set.Kind == "" {
			set.Kind, _ = imageVersion(v.Image)
		}
		if s.Docker == nil {
			// Docker here: a watchdog removes the container if this
			// process dies without stopping it.
			return s.startWatched(ctx, c, set)
		}
		l = c
	default:
		kind := kindOfBinary(v.Binary)
		l = &launch.Local{Binary: v.Binary, Identity: infra.ServerIdentity{Kind: kind, Source: "path", Build: v.Binary}, Net: s.Net}
		if set.Kind == "" {
			set.Kind = kind
		}
	}
	if n := pv.Spec.Server.Cluster; n > 0 {
		// Plan time refuses image versions; the nodes are local processes.
		if _, ok := l.(*launch.Local); !ok {
			return nil, fmt.Errorf("server.cluster %d: %s is not a local process launcher", n, v.Selector())
		}
		l = &launch.Cluster{Launcher: l, N: n}
	}
	srv, err := l.Start(ctx, set)
	if err != nil {
		return nil, err
	}
	r, err := s.adopt(ctx, srv)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// startWatched starts an image version with docker on this host, watched:
// the container is docker's child, not ours, so no parent-death signal
// reaches it when this process dies without stopping it (SIGKILL, a
// crash). A small watchdog in a session of its own holds the read end of
// a pipe whose write end only this process has; when the pipe ends
// without a "done" (Stop says it), the watchdog removes the container.
func (s *Starter) startWatched(ctx context.Context, c *launch.Container, set infra.ServerSettings) (sweeps.RunningServer, error) {
	name := c.ContainerName(set)
	docker := s.DockerCommand
	if docker == "" {
		docker = "docker"
	}
	rd, wr, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("container watchdog for %s: %w", name, err)
	}
	dog := exec.Command("sh", "-c", `IFS= read -r l; [ "$l" = done ] || exec "$0" "$@"`, docker, "rm", "--force", name)
	dog.Stdin = rd
	dog.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = dog.Start()
	rd.Close()
	if err != nil {
		wr.Close()
		return nil, fmt.Errorf("container watchdog for %s: %w", name, err)
	}
	release := func() {
		_, _ = wr.WriteString("done\n")
		wr.Close()
		_ = dog.Wait()
	}
	srv, err := c.Start(ctx, set)
	if err != nil {
		release()
		return nil, err
	}
	r, err := s.adopt(ctx, srv)
	if err != nil {
		release()
		return nil, err
	}
	r.release = release
	return r, nil
}

// adopt wraps a started server for the runner.
func (s *Starter) adopt(ctx context.Context, srv infra.Server) (*running, error) {
	host, portS, err := net.SplitHostPort(srv.Addr())
	if err != nil {
		_ = srv.Stop(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("server address %q: %w", srv.Addr(), err)
	}
	port, _ := strconv.Atoi(portS)
	_, cluster := srv.(interface{ Nodes() []infra.Server })
	r := &running{srv: srv, host: host, port: port, exited: make(chan error, 1), cluster: cluster}
	if pid := srv.Facts().PID; pid > 0 {
		// What tells this server from a later process given its PID: the
		// orphan reaper kills nothing else.
		r.proc, _ = kernel.FS{}.Identity(pid)
	}
	if s.Net != nil {
		r.ctlOpt.Dial = s.Net.Dial
	}
	if t := srv.Facts().TLS; t != nil {
		if r.ctlOpt.TLS, err = t.ClientConfig(); err != nil {
			_ = srv.Stop(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("server %s: %w", srv.Addr(), err)
		}
	}
	go r.watch()
	return r, nil
}

// running adapts an infra.Server to sweeps.RunningServer.
type running struct {
	srv    infra.Server
	host   string
	port   int
	ctlOpt control.Options // how the control plane reaches it: another namespace, TLS
	exited chan error
	// release, when set, runs after Stop: the container watchdog's end.
	release func()
	proc    kernel.Identity // read right after the start; zero when unreadable
	cluster bool            // a launch.Cluster, even of one node

	ctlMu sync.Mutex
	ctl   *control.Conn // SampleInfo's connection, kept between reads
}

// Info keys of a server's process identity in the environment record.
const (
	infoExe        = "proc:exe"
	infoStartTicks = "proc:start_ticks"
	// infoClusterNodes is a cluster's node addresses, the seed first.
	infoClusterNodes = "cluster:nodes"
)

func (r *running) watch() {
	defer close(r.exited)
	for e := range r.srv.Exited() {
		if e.Expected {
			return
		}
		msg := e.String()
		if e.LogTail != "" {
			msg += "; log: " + infra.LastLine(e.LogTail)
		}
		r.exited <- errors.New(msg)
		return
	}
}

func (r *running) Addr() (string, int) { return r.host, r.port }

// BenchTLS implements sweeps.TLSServer: the run's CA (a file on the host
// that started the server; hostbench.HostBencher ships it to a bench elsewhere)
// and the name the server certificate holds.
func (r *running) BenchTLS() lab.TLS {
	t := r.srv.Facts().TLS
	if t == nil {
		return lab.TLS{}
	}
	return lab.TLS{On: true, CACert: t.CAFile, SNI: t.ServerName}
}
func (r *running) PID() int { return r.srv.Facts().PID }

// NodePIDs implements sweeps.ClusterServer: a cluster's nodes after the
// first, whose PID is PID's.
func (r *running) NodePIDs() []int {
	var pids []int
	for i, n := range launch.Nodes(r.srv) {
		if pid := n.Facts().PID; i > 0 && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids
}

func (r *running) Identity() sweeps.Resolved {
	id := r.srv.Facts().Identity
	return sweeps.Resolved{Name: string(id.Kind), Version: id.Version}
}

// Info is INFO server and memory facts plus the effective config, for the
// environment record.
func (r *running) Info(context.Context) (map[string]string, error) {
	f := r.srv.Facts()
	out := map[string]string{}
	for k, v := range f.InfoServer {
		out[k] = v
	}
	for k, v := range f.InfoMemory {
		out[k] = v
	}
	for k, v := range f.Config {
		out["config:"+k] = v
	}
	out["identity"] = f.Identity.String()
	if nodes := launch.Nodes(r.srv); len(nodes) > 1 || r.cluster {
		// The facts above are the seed's (node 1); the others run the
		// same binary with the same settings on their own CPUs and ports.
		addrs := make([]string, len(nodes))
		for i, n := range nodes {
			addrs[i] = n.Addr()
		}
		out[infoClusterNodes] = strings.Join(addrs, " ")
	}
	if r.proc.Exe != "" {
		out[infoExe] = r.proc.Exe
		out[infoStartTicks] = strconv.FormatUint(r.proc.StartTicks, 10)
	}
	return out, nil
}

// FlushAll empties the server, every node of a cluster (a node's
// FLUSHALL empties only the slots it serves).
func (r *running) FlushAll(ctx context.Context) error {
	for _, n := range launch.Nodes(r.srv) {
		host, portS, err := net.SplitHostPort(n.Addr())
		if err != nil {
			return fmt.Errorf("server address %q: %w", n.Addr(), err)
		}
		port, _ := strconv.Atoi(portS)
		ctl, err := control.DialWith(ctx, lab.Workload{Host: host, Port: port}, r.ctlOpt)
		if err != nil {
			return err
		}
		err = ctl.FlushAll(ctx)
		ctl.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// control runs do on SampleInfo's control connection, dialled when
// there is none and dropped after a fault.
func (r *running) control(ctx context.Context, do func(*control.Conn) error) error {
	r.ctlMu.Lock()
	defer r.ctlMu.Unlock()
	if r.ctl == nil {
		c, err := control.DialWith(ctx, lab.Workload{Host: r.host, Port: r.port}, r.ctlOpt)
		if err != nil {
			return err
		}
		r.ctl = c
	}
	err := do(r.ctl)
	var se *resp.ServerError
	if err != nil && !errors.As(err, &se) {
		r.ctl.Close()
		r.ctl = nil
	}
	return err
}

// KeyMemory implements sweeps.KeySampler: MEMORY USAGE of up to n keys
// SCAN gives, on the control connection.
func (r *running) KeyMemory(ctx context.Context, n int) (sweeps.KeyMemory, error) {
	var usage []int64
	err := r.control(ctx, func(c *control.Conn) error {
		keys, err := c.SampleKeys(ctx, n)
		if err != nil {
			return err
		}
		for _, k := range keys {
			u, err := c.MemoryUsage(ctx, k)
			if err != nil {
				return err
			}
			usage = append(usage, u)
		}
		return nil
	})
	return sweeps.KeyMemoryOf(usage), err
}

// BGSave implements sweeps.Snapshotter: BGSAVE on the control connection.
func (r *running) BGSave(ctx context.Context) error {
	return r.control(ctx, func(c *control.Conn) error { return c.BGSave(ctx) })
}

// SampleInfo implements sweeps.InfoSampler on a control connection of
// its own, kept open between reads (two a second while a persisting
// version runs) and dialled again after a fault. At is when the first
// section's reply arrived.
func (r *running) SampleInfo(ctx context.Context, sections ...string) (sweeps.InfoSample, error) {
	s := sweeps.InfoSample{Fields: map[string]string{}}
	err := r.control(ctx, func(c *control.Conn) error {
		for i, sec := range sections {
			m, err := c.Info(ctx, sec)
			if err != nil {
				return err
			}
			if i == 0 {
				s.At = time.Now()
			}
			for k, v := range m {
				s.Fields[k] = v
			}
		}
		return nil
	})
	if err != nil {
		return sweeps.InfoSample{}, err
	}
	return s, nil
}

func (r *running) Exited() <-chan error { return r.exited }
func (r *running) Stop(ctx context.Context) error {
	r.ctlMu.Lock()
	if r.ctl != nil {
		r.ctl.Close()
		r.ctl = nil
	}
	r.ctlMu.Unlock()
	err := r.srv.Stop(ctx)
	if r.release != nil {
		r.release()
		r.release = nil
	}
	return err
}

var versionRE = regexp.MustCompile(`v=([0-9][0-9A-Za-z.+-]*)`)

// binaryVersion asks a server binary its version (valkey-server --version
// prints "Valkey server v=9.1.2 …", redis-server "Redis server v=7.0.15 …").
func binaryVersion(ctx context.Context, bin string) (sweeps.Resolved, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, bin, "--version").Output()
	if err != nil {
		return sweeps.Resolved{}, fmt.Errorf("%s --version: %w", bin, err)
	}
	m := versionRE.FindSubmatch(out)
	if m == nil {
		return sweeps.Resolved{}, fmt.Errorf("%s --version: no v=VERSION in %q", bin, strings.TrimSpace(string(out)))
	}
	kind := kindOfBinary(bin)
	if strings.HasPrefix(strings.ToLower(string(out)), "valkey") {
		kind = infra.Valkey
	} else if strings.HasPrefix(strings.ToLower(string(out)), "redis") {
		kind = infra.Redis
	}
	return sweeps.Resolved{Name: string(kind), Version: string(m[1])}, nil
}

func kindOfBinary(bin string) infra.Kind {
	b := filepath.Base(bin)
	for _, k := range infra.Kinds {
		if strings.HasPrefix(b, string(k)) {
			return k
		}
	}
	return infra.Valkey
}

// imageVersion reads kind and version from an image reference such as
// valkey/valkey:9.1.0 or redis:7.2.5-bookworm.
func imageVersion(image string) (infra.Kind, string) {
	ref := image
	if at := strings.Index(ref, "@"); at >= 0 {
		ref = ref[:at]
	}
	name, tag, _ := strings.Cut(ref[strings.LastIndex(ref, "/")+1:], ":")
	kind := infra.Valkey
	for _, k := range infra.Kinds {
		if strings.HasPrefix(name, string(k)) {
			kind = k
		}
	}
	m := regexp.MustCompile(`^[0-9]+(\.[0-9]+)*`).FindString(tag)
	return kind, m
}
