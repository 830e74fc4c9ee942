package servers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/debpkg"
	"github.com/linerate/linerate/infra/home"
	"github.com/linerate/linerate/infra/launch"
)

// Errors a caller can tell apart.
var (
	ErrUnknownServer = errors.New("unknown server")
	ErrNoSuchVersion = errors.New("no such version")
	ErrNotInstalled  = errors.New("not installed")
	ErrAmbiguous     = errors.New("selector matches several installed versions")
	ErrCheckFailed   = errors.New("installed server failed its check")
)

// Store is a directory of installed server versions:
//
//	<dir>/apt/<suite>/     private apt per suite (lists, cached .debs)
//	<dir>/servers/<id>/    one version: root/ and install.json
//
// A version is listed only when its install.json exists; it is written
// last, after the version has been started and checked, so an interrupted
// install is never listed and the next install redoes it.
type Store struct {
	Dir       string
	Installer *debpkg.Installer
	Log       io.Writer // progress; nil for none
}

// Open returns the store at dir, or at the linerate home when dir is "".
func Open(dir string) (*Store, error) {
	if dir == "" {
		d, err := home.Dir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "servers"), 0o755); err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	return &Store{Dir: dir, Installer: &debpkg.Installer{CacheDir: dir}}, nil
}

func (s *Store) logf(format string, args ...any) {
	if s.Log != nil {
		fmt.Fprintf(s.Log, format+"\n", args...)
	}
}

// Installed is one version in the store. Its identity (version, suite,
// runtime, library versions) is what records carry.
type Installed struct {
	ID         string            `json:"id"`
	Kind       infra.Kind        `json:"kind"`
	Version    string            `json:"version"`     // upstream, checked against INFO server
	DebVersion string            `json:"deb_version"` // exact Debian version
	Suite      string            `json:"suite"`       // where the server package came from
	Runtime    string            `json:"runtime"`     // where its libraries came from
	Root       string            `json:"root"`
	Server     string            `json:"server"` // absolute path of the server executable
	Packages   []string          `json:"packages"`
	Libraries  map[string]string `json:"libraries"` // package -> version
	Allocator  string            `json:"allocator"` // mem_allocator from INFO: the jemalloc the binary was built against, not necessarily the one it loads (see Libraries)
	// TLS says whether the install check's TLS-only start answered PING
	// and INFO over TLS (absent in versions installed before it checked);
	// TLSError is why not.
	TLS         *bool     `json:"tls,omitempty"`
	TLSError    string    `json:"tls_error,omitempty"`
	SizeBytes   int64     `json:"size_bytes"`
	Seconds     float64   `json:"install_seconds"`
	InstalledAt time.Time `json:"installed_at"`
}

// Identity is the record form of the version, with env (e.g. MALLOC_CONF)
// that a campaign sets for it.
func (i *Installed) Identity(env ...string) infra.ServerIdentity {
	libs := map[string]string{}
	for _, k := range []string{"libc6", "libjemalloc2", "libssl3t64", "libssl3"} {
		if v, ok := i.Libraries[k]; ok {
			libs[k] = v
		}
	}
	return infra.ServerIdentity{Kind: i.Kind, Version: i.Version, Build: i.DebVersion, Source: "debian:" + i.Suite,
		Runtime: i.Runtime, Libraries: libs, Env: env}
}

// Launcher returns a launcher for this version.
func (i *Installed) Launcher(env ...string) *launch.Local {
	return &launch.Local{Binary: i.Server, Identity: i.Identity(env...)}
}

// versionID is the directory name: kind, Debian version, suite, runtime.
func versionID(kind infra.Kind, debVersion, suite, runtime string) string {
	v := strings.NewReplacer(":", "_", "~", "_", "/", "_").Replace(debVersion)
	id := string(kind) + "-" + v + "." + suite
	if runtime != suite {
		id += ".rt-" + runtime
	}
	return id
}

// Available lists every build the mirror serves for the given kinds (all
// when none), newest first.
func (s *Store) Available(ctx context.Context, kinds ...infra.Kind) ([]Build, error) {
	if len(kinds) == 0 {
		for _, f := range flavors {
			kinds = append(kinds, f.kind)
		}
	}
	var out []Build
	for _, k := range kinds {
		f, err := flavorOf(k)
		if err != nil {
			return nil, err
		}
		idx, err := s.Installer.LookupAll(ctx, f.suites, f.packages[0])
		if err != nil {
			return nil, fmt.Errorf("list available %s: %w", k, err)
		}
		for _, suite := range f.suites {
			for _, p := range idx[suite].Versions(f.packages[0]) {
				out = append(out, Build{Kind: k, Version: debpkg.Upstream(p.Version), DebVersion: p.Version, Suite: suite})
			}
		}
	}
	sortBuilds(out)
	return out, nil
}

// Resolve finds the newest build matching sel, in suite when it is not "".
func (s *Store) Resolve(ctx context.Context, sel Selector, suite string) (Build, error) {
	f, err := flavorOf(sel.Kind)
	if err != nil {
		return Build{}, err
	}
	suites := f.suites
	if suite != "" {
		suites = []string{suite}
	}
	idx, err := s.Installer.LookupAll(ctx, suites, f.packages[0])
	if err != nil {
		return Build{}, fmt.Errorf("resolve %s: %w", sel, err)
	}
	var all, match []Build
	for _, su := range suites {
		for _, p := range idx[su].Versions(f.packages[0]) {
			b := Build{Kind: sel.Kind, Version: debpkg.Upstream(p.Version), DebVersion: p.Version, Suite: su}
			all = append(all, b)
			if sel.Matches(b.Version, b.DebVersion) {
				match = append(match, b)
			}
		}
	}
	if len(match) == 0 {
		sortBuilds(all)
		have := make([]string, 0, len(all))
		for _, b := range all {
			have = append(have, b.Version+" ("+b.Suite+")")
		}
		return Build{}, fmt.Errorf("%w: %s in %s; available: %s", ErrNoSuchVersion, sel, strings.Join(suites, ", "), strings.Join(have, ", "))
	}
	sortBuilds(match)
	return match[0], nil
}

// InstallOptions refine an install.
type InstallOptions struct {
	Suite   string // take the build from this suite only; "" searches all
	Runtime string // suite of the library closure; "" is the build's own suite
}

// Install puts the newest build matching sel into the store, or returns
// the installed one when it is already there. It is safe to interrupt and
// to run again; concurrent installs into one store take turns.
func (s *Store) Install(ctx context.Context, sel Selector, opt InstallOptions) (*Installed, error) {
	start := time.Now()
	b, err := s.Resolve(ctx, sel, opt.Suite)
	if err != nil {
		return nil, err
	}
	f, _ := flavorOf(b.Kind)
	runtime := opt.Runtime
	if runtime == "" {
		runtime = b.Suite
	}
	unlock, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	id := versionID(b.Kind, b.DebVersion, b.Suite, runtime)
	dir := filepath.Join(s.Dir, "servers", id)
	if inst, err := readInstalled(dir); err == nil {
		if _, err := os.Stat(inst.Server); err == nil {
			s.logf("%s %s is installed (%s)", b.Kind, b.DebVersion, id)
			return inst, nil
		}
	}
	// Not listed from here on until install.json is written again.
	os.Remove(filepath.Join(dir, "install.json"))
	inst, err := s.install(ctx, b, f, runtime, dir, id)
	if err != nil {
		// The partial root is dropped; downloaded packages stay cached.
		os.RemoveAll(dir)
		return nil, err
	}
	inst.Seconds = time.Since(start).Seconds()
	if err := writeJSON(filepath.Join(dir, "install.json"), inst); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.logf("installed %s %s from %s (runtime %s) in %.1fs, %d MB", b.Kind, b.DebVersion, b.Suite, runtime, inst.Seconds, inst.SizeBytes>>20)
	return inst, nil
}

func (s *Store) install(ctx context.Context, b Build, f flavor, runtime, dir, id string) (*Installed, error) {
	s.Installer.Log = s.Log
	res, err := s.Installer.Install(ctx, filepath.Join(dir, "root"), debpkg.Request{
		Suite: b.Suite, Packages: f.packages, Version: b.DebVersion, Runtime: runtime})
	if err != nil {
		return nil, fmt.Errorf("install %s %s: %w", b.Kind, b.DebVersion, err)
	}
	server, err := res.Binary(f.server)
	if err != nil {
		return nil, fmt.Errorf("install %s %s: %w", b.Kind, b.DebVersion, err)
	}
	inst := &Installed{ID: id, Kind: b.Kind, Version: b.Version, DebVersion: b.DebVersion, Suite: b.Suite, Runtime: runtime,
		Root: res.Root, Server: server, Libraries: map[string]string{}, InstalledAt: time.Now().UTC()}
	for _, p := range res.Packages {
		inst.Packages = append(inst.Packages, p.Name+"="+p.Version)
	}
	for _, p := range res.Libraries {
		inst.Libraries[p.Name] = p.Version
	}
	// The check: start it, PING, and compare INFO server's version.
	srv, err := inst.Launcher().Start(ctx, infra.ServerSettings{LogDir: filepath.Join(dir, "check")})
	if err != nil {
		return nil, fmt.Errorf("install %s %s: %w: %w", b.Kind, b.DebVersion, ErrCheckFailed, err)
	}
	inst.Allocator = srv.Facts().InfoServer["mem_allocator"]
	if inst.Allocator == "" {
		inst.Allocator = srv.Facts().InfoMemory["mem_allocator"]
	}
	if err := srv.Stop(ctx); err != nil {
		return nil, fmt.Errorf("install %s %s: %w: %w", b.Kind, b.DebVersion, ErrCheckFailed, err)
	}
	os.RemoveAll(filepath.Join(dir, "check"))
	inst.TLS, inst.TLSError = checkTLS(ctx, inst, filepath.Join(dir, "check-tls"))
	inst.SizeBytes = dirSize(dir)
	return inst, nil
}

// List returns the installed versions, newest first per kind.
func (s *Store) List() ([]*Installed, error) {
	ents, err := os.ReadDir(filepath.Join(s.Dir, "servers"))
	if err != nil {
		return nil, fmt.Errorf("list store %s: %w", s.Dir, err)
	}
	var out []*Installed
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if inst, err := readInstalled(filepath.Join(s.Dir, "servers", e.Name())); err == nil {
			out = append(out, inst)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		if c := debpkg.CompareVersions(out[i].DebVersion, out[j].DebVersion); c != 0 {
			return c > 0
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// Find returns the installed version sel names: the newest match, with
// runtime (when not "") as its library suite. When several runtimes of the
// same build are installed and runtime is "", the build's own runtime wins.
func (s *Store) Find(sel Selector, runtime string) (*Installed, error) {
	all, err := s.List()
	if err != nil {
		return nil, err
	}
	var match []*Installed
	for _, i := range all {
		if i.Kind == sel.Kind && sel.Matches(i.Version, i.DebVersion) && (runtime == "" || i.Runtime == runtime) {
			match = append(match, i)
		}
	}
	if len(match) == 0 {
		return nil, fmt.Errorf("%w: %s%s in %s (run: linerate servers install %s)", ErrNotInstalled, sel, rtSuffix(runtime), s.Dir, sel)
	}
	best := match[0]
	for _, m := range match[1:] {
		if m.DebVersion == best.DebVersion && m.Runtime == m.Suite && best.Runtime != best.Suite {
			best = m
		}
	}
	return best, nil
}

// Launcher returns a launcher for the installed version sel names (see
// Find), with env set for the server and recorded in its identity.
func (s *Store) Launcher(sel Selector, runtime string, env ...string) (*launch.Local, *Installed, error) {
	inst, err := s.Find(sel, runtime)
	if err != nil {
		return nil, nil, err
	}
	return inst.Launcher(env...), inst, nil
}

func rtSuffix(rt string) string {
	if rt == "" {
		return ""
	}
	return " (runtime " + rt + ")"
}

// Remove deletes every installed version matching sel (and runtime when
// not ""). The listing entry goes first, so a crash mid-way never leaves a
// listed version without its files.
func (s *Store) Remove(sel Selector, runtime string) ([]*Installed, error) {
	unlock, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	all, err := s.List()
	if err != nil {
		return nil, err
	}
	var removed []*Installed
	for _, i := range all {
		if i.Kind != sel.Kind || !sel.Matches(i.Version, i.DebVersion) || (runtime != "" && i.Runtime != runtime) {
			continue
		}
		dir := filepath.Join(s.Dir, "servers", i.ID)
		if err := os.Remove(filepath.Join(dir, "install.json")); err != nil {
			return removed, fmt.Errorf("remove %s: %w", i.ID, err)
		}
		if err := os.RemoveAll(dir); err != nil {
			return removed, fmt.Errorf("remove %s: %w", i.ID, err)
		}
		removed = append(removed, i)
	}
	if len(removed) == 0 {
		return nil, fmt.Errorf("%w: %s%s in %s", ErrNotInstalled, sel, rtSuffix(runtime), s.Dir)
	}
	return removed, nil
}

// lock takes the store's lock; installs and removals take turns.
func (s *Store) lock() (func(), error) {
	f, err := os.OpenFile(filepath.Join(s.Dir, "servers", ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock store %s: %w", s.Dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock store %s: %w", s.Dir, err)
	}
	return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

func readInstalled(dir string) (*Installed, error) {
	b, err := os.ReadFile(filepath.Join(dir, "install.json"))
	if err != nil {
		return nil, err
	}
	var i Installed
	if err := json.Unmarshal(b, &i); err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	return &i, nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}

func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// checkTLS starts an installed version TLS-only (a throwaway CA and
// certificate, --port 0 --tls-port) and stops it: the launcher's
// readiness PING and its INFO facts went over TLS. A build without TLS is
// still a version to measure, so a failure is a fact, not an error.
func checkTLS(ctx context.Context, inst *Installed, dir string) (*bool, string) {
	defer os.RemoveAll(dir)
	ok := false
	srv, err := inst.Launcher().Start(ctx, infra.ServerSettings{TLS: true, LogDir: dir})
	if err != nil {
		return &ok, err.Error()
	}
	if err := srv.Stop(ctx); err != nil {
		return &ok, err.Error()
	}
	ok = srv.Facts().InfoServer["redis_version"] != ""
	if !ok {
		return &ok, "INFO server over TLS said nothing"
	}
	return &ok, ""
}
