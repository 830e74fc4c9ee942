package debpkg

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/linerate/linerate/infra/home"
)

// Installer unpacks Debian packages with their shared-library closure into
// a private root, using one private apt per suite under CacheDir. The zero
// value uses the linerate home directory.
type Installer struct {
	CacheDir   string        // holds apt/<suite>/ and tools/; default home.Dir()
	Mirror     string        // default DefaultMirror
	Keyring    string        // default DefaultKeyring
	Arch       string        // dpkg architecture; default the running binary's
	MaxListAge time.Duration // re-run apt-get update after this; default 24h
	Log        io.Writer     // progress lines; nil for none

	mu      sync.Mutex
	indexes map[string]*Index // parsed once per Installer
}

// Request names what to put in a root.
type Request struct {
	Suite    string   // where the packages come from
	Packages []string // binary packages, e.g. valkey-tools valkey-server
	// Version pins every package of Packages (they come from one source
	// package); empty takes each package's newest version in Suite.
	Version string
	// Runtime is the suite the library closure (libc, loader, jemalloc…)
	// comes from; empty means Suite.
	Runtime string
}

// Validate names the first bad field.
func (r Request) Validate() error {
	if !validSuite(r.Suite) {
		return fmt.Errorf("request suite: %w %q (accepted: %s)", ErrUnknownSuite, r.Suite, strings.Join(Suites, ", "))
	}
	if r.Runtime != "" && !validSuite(r.Runtime) {
		return fmt.Errorf("request runtime: %w %q (accepted: %s)", ErrUnknownSuite, r.Runtime, strings.Join(Suites, ", "))
	}
	if len(r.Packages) == 0 {
		return errors.New("request packages: empty (name at least one binary package)")
	}
	return nil
}

func (r Request) runtime() string {
	if r.Runtime != "" {
		return r.Runtime
	}
	return r.Suite
}

// Result describes a filled root.
type Result struct {
	Root        string     `json:"root"`
	Arch        string     `json:"arch"`
	Suite       string     `json:"suite"`
	Runtime     string     `json:"runtime"`
	Packages    []*Package `json:"packages"`  // what was asked for, resolved
	Libraries   []*Package `json:"libraries"` // the closure, from Runtime
	Loader      string     `json:"loader"`
	Executables []string   `json:"executables"` // relocated, relative to Root
	Seconds     float64    `json:"seconds"`
}

// Version is the resolved version of the first requested package.
func (r *Result) Version() string { return r.Packages[0].Version }

const (
	markerPartial = ".debpkg-partial"
	markerDone    = ".debpkg.json"
)

func (in *Installer) cacheDir() (string, error) {
	if in.CacheDir != "" {
		return in.CacheDir, nil
	}
	return home.Dir()
}

func (in *Installer) arch() string {
	if in.Arch != "" {
		return in.Arch
	}
	return DpkgArch(defaultGOARCH)
}

func (in *Installer) logf(format string, args ...any) {
	if in.Log != nil {
		fmt.Fprintf(in.Log, format+"\n", args...)
	}
}

func (in *Installer) apt(suite string) (*Apt, error) {
	dir, err := in.cacheDir()
	if err != nil {
		return nil, err
	}
	a, err := NewApt(dir, suite)
	if err != nil {
		return nil, err
	}
	a.Mirror, a.Keyring, a.Arch = in.Mirror, in.Keyring, in.arch()
	return a, nil
}

func (in *Installer) maxAge() time.Duration {
	if in.MaxListAge > 0 {
		return in.MaxListAge
	}
	return 24 * time.Hour
}

// Index returns the (refreshed when stale) Packages index of suite.
func (in *Installer) Index(ctx context.Context, suite string) (*Index, error) {
	a, err := in.apt(suite)
	if err != nil {
		return nil, err
	}
	in.mu.Lock()
	ix := in.indexes[suite]
	in.mu.Unlock()
	if ix != nil {
		return ix, nil
	}
	if err := a.Update(ctx, in.maxAge()); err != nil {
		return nil, err
	}
	if ix, err = a.Index(); err != nil {
		return nil, err
	}
	in.mu.Lock()
	if in.indexes == nil {
		in.indexes = map[string]*Index{}
	}
	in.indexes[suite] = ix
	in.mu.Unlock()
	return ix, nil
}

// Lookup returns an index of suite holding only the named packages (every
// version of each). It reads the suite's Packages file for those stanzas
// alone, which is far quicker than parsing all of it; a suite already
// parsed by this Installer is used as it is.
func (in *Installer) Lookup(ctx context.Context, suite string, names ...string) (*Index, error) {
	in.mu.Lock()
	full := in.indexes[suite]
	in.mu.Unlock()
	if full != nil {
		return full, nil
	}
	a, err := in.apt(suite)
	if err != nil {
		return nil, err
	}
	if err := a.Update(ctx, in.maxAge()); err != nil {
		return nil, err
	}
	path, err := a.indexPath()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s index: %w", suite, err)
	}
	var picked bytes.Buffer
	for _, name := range names {
		key := []byte("Package: " + name + "\n")
		for off := 0; ; {
			i := bytes.Index(data[off:], key)
			if i < 0 {
				break
			}
			i += off
			end := bytes.Index(data[i:], []byte("\n\n"))
			if end < 0 {
				end = len(data) - i
			}
			if i == 0 || data[i-1] == '\n' { // a stanza start, not a field's tail
				picked.Write(data[i : i+end])
				picked.WriteString("\n\n")
			}
			off = i + end
		}
	}
	return ParseIndex(suite, &picked)
}

// LookupAll is Lookup over several suites in parallel.
func (in *Installer) LookupAll(ctx context.Context, suites []string, names ...string) (map[string]*Index, error) {
	return perSuite(suites, func(s string) (*Index, error) { return in.Lookup(ctx, s, names...) })
}

// Indexes returns the indexes of several suites, updated and parsed in
// parallel (each suite has its own private apt, so they do not contend).
func (in *Installer) Indexes(ctx context.Context, suites []string) (map[string]*Index, error) {
	return perSuite(suites, func(s string) (*Index, error) { return in.Index(ctx, s) })
}

// perSuite runs get for every suite at once and gathers the indexes it
// returned, with every error joined.
func perSuite(suites []string, get func(suite string) (*Index, error)) (map[string]*Index, error) {
	out := make(map[string]*Index, len(suites))
	errs := make([]error, len(suites))
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, s := range suites {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ix, err := get(s)
			if err != nil {
				errs[i] = err
				return
			}
			mu.Lock()
			out[s] = ix
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// runtimeIndex is where a closure is resolved: the suite itself, or for a
// backports suite the backports layer over its base suite.
func (in *Installer) runtimeIndex(ctx context.Context, suite string) (*Index, error) {
	base := BaseSuite(suite)
	if base == suite {
		return in.Index(ctx, suite)
	}
	idx, err := in.Indexes(ctx, []string{base, suite})
	if err != nil {
		return nil, err
	}
	return Combine(suite, idx[base], idx[suite]), nil
}

// download fetches each package from its own suite's private apt.
func (in *Installer) download(ctx context.Context, pkgs []*Package) ([]string, error) {
	out := make([]string, len(pkgs))
	bySuite := map[string][]int{}
	for i, p := range pkgs {
		bySuite[p.Suite] = append(bySuite[p.Suite], i)
	}
	for suite, idx := range bySuite {
		a, err := in.apt(suite)
		if err != nil {
			return nil, err
		}
		group := make([]*Package, len(idx))
		for j, i := range idx {
			group[j] = pkgs[i]
		}
		paths, err := a.Download(ctx, group)
		if err != nil {
			return nil, err
		}
		for j, i := range idx {
			out[i] = paths[j]
		}
	}
	return out, nil
}

// Resolve finds the packages of req and their library closure without
// downloading anything.
func (in *Installer) Resolve(ctx context.Context, req Request) (pkgs, libs []*Package, err error) {
	if err := req.Validate(); err != nil {
		return nil, nil, err
	}
	ix, err := in.Lookup(ctx, req.Suite, req.Packages...)
	if err != nil {
		return nil, nil, err
	}
	rix, err := in.runtimeIndex(ctx, req.runtime())
	if err != nil {
		return nil, nil, err
	}
	for _, name := range req.Packages {
		var p *Package
		if req.Version != "" {
			p = ix.Find(name, req.Version)
		} else {
			p = ix.Newest(name)
		}
		if p == nil {
			have := []string{}
			for _, v := range ix.Versions(name) {
				have = append(have, v.Version)
			}
			if len(have) == 0 {
				return nil, nil, fmt.Errorf("%w: %s is not in %s", ErrNotFound, name, req.Suite)
			}
			return nil, nil, fmt.Errorf("%w: %s %s is not in %s (it has %s)", ErrNotFound, name, req.Version, req.Suite, strings.Join(have, ", "))
		}
		pkgs = append(pkgs, p)
	}
	libs, err = rix.Closure(pkgs)
	if err != nil {
		return nil, nil, fmt.Errorf("resolve %s with %s libraries: %w", req.Packages[0], req.runtime(), err)
	}
	return pkgs, libs, nil
}

// Install fills root with req's packages and their library closure,
// relocates the executables to run from root, and checks every ELF file's
// libraries resolve inside root. root must be missing, empty, or a root an
// earlier Install left (finished or not); anything else is refused so a
// wrong path never gets wiped. A finished root for the same request is
// reused as it is.
func (in *Installer) Install(ctx context.Context, root string, req Request) (*Result, error) {
	start := time.Now()
	if err := req.Validate(); err != nil {
		return nil, err
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if prev, ok := readDone(root); ok && prev.Suite == req.Suite && prev.Runtime == req.runtime() &&
		samePackages(prev.Packages, req) && CheckRoot(root, in.arch()) == nil {
		return prev, nil
	}
	if err := prepareRoot(root); err != nil {
		return nil, err
	}
	pkgs, libs, err := in.Resolve(ctx, req)
	if err != nil {
		return nil, err
	}
	in.logf("resolve: %s + %d libraries from %s", names(pkgs), len(libs), req.runtime())
	debs, err := in.download(ctx, pkgs)
	if err != nil {
		return nil, err
	}
	libDebs, err := in.download(ctx, libs)
	if err != nil {
		return nil, err
	}
	in.logf("download: %d packages in %s", len(debs)+len(libDebs), time.Since(start).Round(time.Millisecond))
	if err := unpack(ctx, root, append(debs, libDebs...)); err != nil {
		return nil, err
	}
	if err := relativizeSymlinks(root); err != nil {
		return nil, fmt.Errorf("fix symlinks in %s: %w", root, err)
	}
	pe, err := in.patchelf(ctx, BaseSuite(req.runtime()))
	if err != nil {
		return nil, err
	}
	exes, err := relocate(ctx, pe, root, in.arch())
	if err != nil {
		return nil, err
	}
	if err := CheckRoot(root, in.arch()); err != nil {
		return nil, err
	}
	loader, _ := findLoader(root, in.arch())
	res := &Result{Root: root, Arch: in.arch(), Suite: req.Suite, Runtime: req.runtime(), Packages: pkgs,
		Libraries: libs, Loader: loader, Executables: exes, Seconds: time.Since(start).Seconds()}
	if err := writeDone(root, res); err != nil {
		return nil, err
	}
	in.logf("install: %s into %s in %.1fs", names(pkgs), root, res.Seconds)
	return res, nil
}

func names(ps []*Package) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, " ")
}

func samePackages(prev []*Package, req Request) bool {
	if len(prev) != len(req.Packages) {
		return false
	}
	for i, p := range prev {
		if p.Name != req.Packages[i] || (req.Version != "" && p.Version != req.Version) {
			return false
		}
	}
	return true
}

func readDone(root string) (*Result, bool) {
	b, err := os.ReadFile(filepath.Join(root, markerDone))
	if err != nil {
		return nil, false
	}
	var r Result
	if json.Unmarshal(b, &r) != nil || len(r.Packages) == 0 {
		return nil, false
	}
	return &r, true
}

func writeDone(root string, r *Result) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(root, markerDone+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("record install in %s: %w", root, err)
	}
	if err := os.Rename(tmp, filepath.Join(root, markerDone)); err != nil {
		return fmt.Errorf("record install in %s: %w", root, err)
	}
	return os.Remove(filepath.Join(root, markerPartial))
}

// prepareRoot empties a root left by an earlier (possibly interrupted)
// install, or creates it, and marks it partial.
func prepareRoot(root string) error {
	ents, err := os.ReadDir(root)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("prepare root %s: %w", root, err)
	case len(ents) == 0:
	default:
		_, e1 := os.Stat(filepath.Join(root, markerPartial))
		_, e2 := os.Stat(filepath.Join(root, markerDone))
		if e1 != nil && e2 != nil {
			return fmt.Errorf("prepare root %s: not empty and not made by debpkg; refusing to overwrite it", root)
		}
		if err := os.RemoveAll(root); err != nil {
			return fmt.Errorf("prepare root %s: %w", root, err)
		}
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return fmt.Errorf("prepare root %s: %w", root, err)
	}
	return os.WriteFile(filepath.Join(root, markerPartial), nil, 0o644)
}

// patchelf returns a patchelf to relocate with: the host's when it has
// one, otherwise Debian's patchelf unpacked privately (from suite) under
// the cache and run through its own loader.
func (in *Installer) patchelf(ctx context.Context, suite string) (patchelf, error) {
	if p, err := exec.LookPath("patchelf"); err == nil {
		return patchelf{argv: []string{p}}, nil
	}
	dir, err := in.cacheDir()
	if err != nil {
		return patchelf{}, err
	}
	root := filepath.Join(dir, "tools", "patchelf-"+suite+"-"+in.arch())
	// Another process may be unpacking the same tool: take turns.
	unlock, err := (&Apt{Dir: filepath.Join(dir, "tools"), Suite: "tools"}).lock()
	if err != nil {
		return patchelf{}, err
	}
	defer unlock()
	res, ok := readDone(root)
	if !ok {
		if err := prepareRoot(root); err != nil {
			return patchelf{}, err
		}
		pkgs, libs, err := in.Resolve(ctx, Request{Suite: suite, Packages: []string{"patchelf"}})
		if err != nil {
			return patchelf{}, fmt.Errorf("get patchelf: %w", err)
		}
		debs, err := in.download(ctx, append(pkgs, libs...))
		if err != nil {
			return patchelf{}, fmt.Errorf("get patchelf: %w", err)
		}
		if err := unpack(ctx, root, debs); err != nil {
			return patchelf{}, fmt.Errorf("get patchelf: %w", err)
		}
		if err := relativizeSymlinks(root); err != nil {
			return patchelf{}, err
		}
		loader, err := findLoader(root, in.arch())
		if err != nil {
			return patchelf{}, fmt.Errorf("get patchelf: %w", err)
		}
		res = &Result{Root: root, Arch: in.arch(), Suite: suite, Runtime: suite, Packages: pkgs, Libraries: libs, Loader: loader}
		if err := writeDone(root, res); err != nil {
			return patchelf{}, err
		}
	}
	// Through the loader, with root's libraries: no relocation needed.
	return patchelf{argv: []string{res.Loader, "--library-path", strings.Join(LibDirs(root, in.arch()), ":"),
		filepath.Join(root, "usr/bin/patchelf")}}, nil
}

// Install is the short form for one package: it unpacks pkg from suite with
// its library closure into root (using the default private apt cache under
// the linerate home) and returns the path of the installed binary named
// like the package, or its first executable. For example
//
//	iperf3, err := debpkg.Install(ctx, dir, "trixie", "iperf3")
//
// gives a runnable iperf3 3.18 on a bookworm host without touching the
// system.
func Install(ctx context.Context, root, suite, pkg string) (string, error) {
	in := &Installer{}
	res, err := in.Install(ctx, root, Request{Suite: suite, Packages: []string{pkg}})
	if err != nil {
		return "", err
	}
	return res.Binary(pkg)
}

// Tool is Install into a root of its own under the linerate home
// (<home>/tools/<pkg>-<suite>-<arch>), for callers that just need the
// binary: the first call unpacks it, later calls return at once.
//
//	iperf3, err := debpkg.Tool(ctx, "trixie", "iperf3")
func Tool(ctx context.Context, suite, pkg string) (string, error) {
	dir, err := home.Dir()
	if err != nil {
		return "", err
	}
	root := filepath.Join(dir, "tools", pkg+"-"+suite+"-"+DpkgArch(defaultGOARCH))
	return Install(ctx, root, suite, pkg)
}

// Binary returns the absolute path of the executable called name in the
// root, or of the first executable when there is none by that name.
func (r *Result) Binary(name string) (string, error) {
	for _, e := range r.Executables {
		if filepath.Base(e) == name {
			return filepath.Join(r.Root, e), nil
		}
	}
	for _, d := range []string{"usr/bin", "usr/sbin", "bin", "sbin"} {
		p := filepath.Join(r.Root, d, name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if len(r.Executables) > 0 {
		return filepath.Join(r.Root, r.Executables[0]), nil
	}
	return "", fmt.Errorf("%w: no executable %s in %s", ErrNotFound, name, r.Root)
}
