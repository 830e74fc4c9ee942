package debpkg

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// Suites are the Debian suites a private apt configuration may name. They
// are only ever written into a private sources list under the cache
// directory, never into the system's.
var Suites = []string{"bookworm", "bookworm-backports", "trixie", "sid"}

// DefaultMirror and DefaultKeyring are what a private apt uses unless told
// otherwise.
const (
	DefaultMirror  = "http://deb.debian.org/debian"
	DefaultKeyring = "/usr/share/keyrings/debian-archive-keyring.gpg"
)

// Errors callers can tell apart.
var (
	ErrUnknownSuite    = errors.New("unknown suite")
	ErrSuiteUnserved   = errors.New("suite not served by the mirror")
	ErrNotFound        = errors.New("package not found")
	ErrUnsatisfiable   = errors.New("dependency not satisfiable")
	ErrBrokenDownload  = errors.New("broken download")
	ErrUnresolvedLib   = errors.New("shared library does not resolve inside the root")
	ErrWrongArch       = errors.New("wrong architecture")
	ErrToolUnavailable = errors.New("required tool missing")
)

// Apt is a private apt configuration for one suite: its own sources list,
// state, lists and cache under Dir, and its own apt.conf which reads none of
// the system's configuration. It only ever runs `apt-get update` and
// `apt-get download`; nothing is installed.
type Apt struct {
	Dir     string // e.g. <home>/apt/sid
	Suite   string
	Mirror  string // default DefaultMirror
	Keyring string // default DefaultKeyring
	Arch    string // dpkg architecture, default from the running binary
}

// NewApt returns the private apt for suite under cacheDir/apt/<suite>.
func NewApt(cacheDir, suite string) (*Apt, error) {
	if !validSuite(suite) {
		return nil, fmt.Errorf("%w %q (accepted: %s)", ErrUnknownSuite, suite, strings.Join(Suites, ", "))
	}
	return &Apt{Dir: filepath.Join(cacheDir, "apt", suite), Suite: suite}, nil
}

func validSuite(s string) bool {
	for _, x := range Suites {
		if x == s {
			return true
		}
	}
	return false
}

// DpkgArch maps the Go architecture to Debian's name for it.
func DpkgArch(goarch string) string {
	switch goarch {
	case "amd64", "arm64", "s390x", "ppc64le", "riscv64", "mips64le":
		return goarch
	case "386":
		return "i386"
	case "arm":
		return "armhf"
	}
	return goarch
}

func (a *Apt) mirror() string {
	if a.Mirror != "" {
		return strings.TrimRight(a.Mirror, "/")
	}
	return DefaultMirror
}

func (a *Apt) keyring() string {
	if a.Keyring != "" {
		return a.Keyring
	}
	return DefaultKeyring
}

func (a *Apt) arch() string {
	if a.Arch != "" {
		return a.Arch
	}
	return DpkgArch(runtime.GOARCH)
}

// DebDir is where downloaded .deb files are kept (the package cache that
// makes a second install fast).
func (a *Apt) DebDir() string { return filepath.Join(a.Dir, "debs") }

func (a *Apt) confPath() string { return filepath.Join(a.Dir, "apt.conf") }

// setup writes the private configuration. Every directory apt would
// otherwise take from /etc or /var is pointed inside Dir.
func (a *Apt) setup() error {
	for _, d := range []string{"lists/partial", "cache/archives/partial", "etc/apt.conf.d", "etc/preferences.d", "etc/sources.list.d", "etc/trusted.gpg.d", "debs"} {
		if err := os.MkdirAll(filepath.Join(a.Dir, d), 0o755); err != nil {
			return fmt.Errorf("set up private apt for %s: %w", a.Suite, err)
		}
	}
	if _, err := os.Stat(a.keyring()); err != nil {
		return fmt.Errorf("set up private apt for %s: keyring: %w", a.Suite, err)
	}
	src := fmt.Sprintf("deb [arch=%s signed-by=%s] %s %s main\n", a.arch(), a.keyring(), a.mirror(), a.Suite)
	d := a.Dir
	conf := fmt.Sprintf(`// Private apt configuration written by linerate; reads nothing from /etc/apt.
Dir::Etc "%[1]s/etc";
Dir::Etc::Main "/dev/null";
Dir::Etc::Parts "%[1]s/etc/apt.conf.d";
Dir::Etc::SourceList "%[1]s/etc/sources.list";
Dir::Etc::SourceParts "%[1]s/etc/sources.list.d";
Dir::Etc::Preferences "/dev/null";
Dir::Etc::PreferencesParts "%[1]s/etc/preferences.d";
Dir::Etc::Trusted "/dev/null";
Dir::Etc::TrustedParts "%[1]s/etc/trusted.gpg.d";
Dir::State "%[1]s";
Dir::State::Lists "%[1]s/lists";
Dir::State::status "%[1]s/status";
Dir::Cache "%[1]s/cache";
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
Dir::Log "%[1]s";
APT::Architecture "%[2]s";
APT::Architectures { "%[2]s"; };
Acquire::Languages "none";
Acquire::IndexTargets::deb::Contents-deb::DefaultEnabled "false";
Acquire::Retries "2";
Acquire::http::Timeout "30";
// The mirror may be a dated snapshot; signatures are still checked.
Acquire::Check-Valid-Until "false";
`, d, a.arch())
	if os.Geteuid() == 0 {
		// apt's download sandbox user cannot write into a root-owned cache.
		conf += "APT::Sandbox::User \"root\";\n"
	}
	if err := writeIfChanged(filepath.Join(d, "etc", "sources.list"), src); err != nil {
		return err
	}
	if err := writeIfChanged(filepath.Join(d, "status"), ""); err != nil {
		return err
	}
	return writeIfChanged(a.confPath(), conf)
}

func writeIfChanged(path, content string) error {
	if b, err := os.ReadFile(path); err == nil && string(b) == content {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}

func (a *Apt) run(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "apt-get", append([]string{"-q"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "APT_CONFIG="+a.confPath(), "LC_ALL=C", "DEBIAN_FRONTEND=noninteractive")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// indexPath is the Packages file apt-get update leaves in the lists dir.
func (a *Apt) indexPath() (string, error) {
	m, _ := filepath.Glob(filepath.Join(a.Dir, "lists", "*_dists_"+a.Suite+"_main_binary-"+a.arch()+"_Packages"))
	if len(m) == 0 {
		return "", fmt.Errorf("%w: no Packages index for %s", os.ErrNotExist, a.Suite)
	}
	return m[0], nil
}

// lock serializes private apt runs on one suite across processes (tests
// of several packages share a cache): apt's own lock would fail instead of
// waiting.
func (a *Apt) lock() (func(), error) {
	if err := os.MkdirAll(a.Dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(a.Dir, "linerate.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock private apt %s: %w", a.Suite, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock private apt %s: %w", a.Suite, err)
	}
	return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// Update refreshes the suite's index when it is missing or older than
// maxAge (0: always).
func (a *Apt) Update(ctx context.Context, maxAge time.Duration) error {
	unlock, err := a.lock()
	if err != nil {
		return err
	}
	defer unlock()
	if err := a.setup(); err != nil {
		return err
	}
	if p, err := a.indexPath(); err == nil && maxAge > 0 {
		if st, err := os.Stat(p); err == nil && time.Since(st.ModTime()) < maxAge {
			return nil
		}
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return fmt.Errorf("update %s: %w: apt-get", a.Suite, ErrToolUnavailable)
	}
	out, err := a.run(ctx, a.Dir, "update")
	// apt-get update exits 0 when a source failed to download ("W: Failed
	// to fetch … Some index files failed to download"), so look at its words
	// too; a stale index left from an earlier update is not used then.
	text := string(out)
	if err != nil || strings.Contains(text, "Failed to fetch") || strings.Contains(text, "failed to download") || strings.Contains(text, "E: ") {
		return fmt.Errorf("update %s from %s: %w: %s", a.Suite, a.mirror(), ErrSuiteUnserved, lastLines(text, 3))
	}
	if _, err := a.indexPath(); err != nil {
		return fmt.Errorf("update %s from %s: %w: %s", a.Suite, a.mirror(), ErrSuiteUnserved, lastLines(text, 3))
	}
	// Touch the index so maxAge counts from this check, not from the
	// mirror's last change (apt keeps the server's mtime).
	p, _ := a.indexPath()
	now := time.Now()
	_ = os.Chtimes(p, now, now)
	return nil
}

// Index parses the suite's Packages index (Update must have run).
func (a *Apt) Index() (*Index, error) {
	p, err := a.indexPath()
	if err != nil {
		return nil, fmt.Errorf("read %s index: %w (run an update first)", a.Suite, err)
	}
	return ParseIndexFile(a.Suite, p)
}

// Download fetches pkgs with apt-get download into DebDir, skipping files
// already there whose SHA256 matches the index, and returns their paths in
// order. A file whose checksum does not match is removed and reported as a
// broken download.
func (a *Apt) Download(ctx context.Context, pkgs []*Package) ([]string, error) {
	unlock, err := a.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := a.setup(); err != nil {
		return nil, err
	}
	var want []string
	paths := make([]string, len(pkgs))
	for i, p := range pkgs {
		paths[i] = filepath.Join(a.DebDir(), p.DebFile())
		if ok, _ := checkSHA256(paths[i], p.SHA256); ok {
			continue
		}
		os.Remove(paths[i])
		want = append(want, p.Name+"="+p.Version)
	}
	if len(want) > 0 {
		out, err := a.run(ctx, a.DebDir(), append([]string{"download"}, want...)...)
		if err != nil {
			return nil, fmt.Errorf("download %s from %s: %w: %w: %s", strings.Join(want, " "), a.Suite, ErrBrokenDownload, err, lastLines(string(out), 4))
		}
	}
	for i, p := range pkgs {
		ok, err := checkSHA256(paths[i], p.SHA256)
		if err != nil || !ok {
			os.Remove(paths[i])
			return nil, fmt.Errorf("download %s: %w: checksum does not match the %s index", p, ErrBrokenDownload, a.Suite)
		}
	}
	return paths, nil
}

func checkSHA256(path, want string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return false, err
	}
	return want == "" || hex.EncodeToString(h.Sum(nil)) == want, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
