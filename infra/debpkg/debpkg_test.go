package debpkg

import (
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/infra/home"
	"github.com/linerate/linerate/infra/internal/mirrortest"
)

func TestCompareVersions(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"1.0", "1.0", 0},
		{"1.0", "1.1", -1},
		{"1.10", "1.9", 1},
		{"1:1.0", "2.0", 1},
		{"5:7.0.15-1~deb12u4", "5:7.0.15-1", -1}, // ~ sorts before the end
		{"8.0.1+dfsg1-1~bpo12+1", "8.0.1+dfsg1-1", -1},
		{"9.1.2-1", "8.1.1+dfsg1-3", 1},
		{"1.0a", "1.0", 1},
		{"1.0~rc1", "1.0", -1},
		{"2.43-7", "2.43-10", -1},
		{"1.0-1", "1.0-1.1", -1},
	}
	for _, tc := range tests {
		if got := CompareVersions(tc.a, tc.b); got != tc.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := CompareVersions(tc.b, tc.a); got != -tc.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", tc.b, tc.a, got, -tc.want)
		}
	}
}

func TestUpstream(t *testing.T) {
	for in, want := range map[string]string{
		"5:7.0.15-1~deb12u4":    "7.0.15",
		"8.1.1+dfsg1-3+deb13u3": "8.1.1",
		"9.1.2-1":               "9.1.2",
		"3.18-2":                "3.18",
	} {
		if got := Upstream(in); got != want {
			t.Errorf("Upstream(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseDepends(t *testing.T) {
	got := ParseDepends("libc6 (>= 2.38), systemd | systemd-sysusers, libssl3t64:any (>= 3.0.0) [amd64], foo")
	want := [][]Relation{
		{{"libc6", ">=", "2.38"}},
		{{"systemd", "", ""}, {"systemd-sysusers", "", ""}},
		{{"libssl3t64", ">=", "3.0.0"}},
		{{"foo", "", ""}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d groups, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		for j := range want[i] {
			if got[i][j] != want[i][j] {
				t.Errorf("group %d alt %d = %+v, want %+v", i, j, got[i][j], want[i][j])
			}
		}
	}
}

const fixtureIndex = `Package: valkey-tools
Version: 9.1.2-1
Architecture: amd64
Section: database
Depends: systemd | systemd-sysusers, adduser, libc6 (>= 2.38), libjemalloc2 (>= 4.0.0), libssl3
SHA256: aa

Package: libc6
Version: 2.43-7
Architecture: amd64
Section: libs
Depends: libgcc-s1

Package: libc6
Version: 2.41-1
Architecture: amd64
Section: libs

Package: libgcc-s1
Version: 16.2.0-4
Architecture: amd64
Section: libs
Depends: libc6 (>= 2.35)

Package: libjemalloc2
Version: 5.3.1-2
Architecture: amd64
Section: libs
Depends: libc6 (>= 2.38)

Package: libssl3t64
Version: 3.6.5-1
Architecture: amd64
Section: libs
Provides: libssl3 (= 3.6.5-1)
Depends: libc6 (>= 2.38)

Package: systemd
Version: 262-1
Architecture: amd64
Section: admin
Depends: libc6, libsystemd-shared

Package: adduser
Version: 3.1
Architecture: all
Section: admin
Depends: passwd
`

func TestClosure(t *testing.T) {
	ix, err := ParseIndex("sid", strings.NewReader(fixtureIndex))
	if err != nil {
		t.Fatal(err)
	}
	if p := ix.Newest("libc6"); p == nil || p.Version != "2.43-7" {
		t.Fatalf("Newest(libc6) = %v, want 2.43-7", p)
	}
	libs, err := ix.Closure([]*Package{ix.Newest("valkey-tools")})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range libs {
		names = append(names, l.Name)
	}
	// systemd and adduser are packaging, not libraries: not followed.
	if got, want := strings.Join(names, " "), "libc6 libjemalloc2 libssl3t64 libgcc-s1"; got != want {
		t.Errorf("closure = %q, want %q", got, want)
	}

	// A runtime whose libc is too old for the binary is refused, named.
	old, _ := ParseIndex("bookworm", strings.NewReader(strings.Replace(fixtureIndex, "Version: 2.43-7", "Version: 2.36-9", 1)))
	old.packages["libc6"] = old.packages["libc6"][:1]
	old.packages["libc6"][0].Version = "2.36-9"
	_, err = old.Closure([]*Package{old.Newest("valkey-tools")})
	if !errors.Is(err, ErrUnsatisfiable) || !strings.Contains(err.Error(), "libc6 (>= 2.38)") {
		t.Errorf("closure on old libc: err = %v, want ErrUnsatisfiable naming libc6 (>= 2.38)", err)
	}
}

func TestInRootAndSymlinks(t *testing.T) {
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "lib/x86_64-linux-gnu"), 0o755))
	must(t, os.MkdirAll(filepath.Join(root, "lib64"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"), []byte("x"), 0o755))
	// Debian ships this link absolute; inside a root it must not reach the host.
	must(t, os.Symlink("/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", filepath.Join(root, "lib64/ld-linux-x86-64.so.2")))
	p, err := inRoot(root, "lib64/ld-linux-x86-64.so.2")
	if err != nil || p != filepath.Join(root, "lib/x86_64-linux-gnu/ld-linux-x86-64.so.2") {
		t.Fatalf("inRoot = %q, %v", p, err)
	}
	must(t, relativizeSymlinks(root))
	target, _ := os.Readlink(filepath.Join(root, "lib64/ld-linux-x86-64.so.2"))
	if filepath.IsAbs(target) || target != "../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" {
		t.Errorf("relativized link = %q", target)
	}
}

// fakeELF is a minimal ELF header for machine: enough for debug/elf.
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

func TestWrongArch(t *testing.T) {
	root := t.TempDir()
	bin := filepath.Join(root, "usr/bin/valkey-server")
	must(t, os.MkdirAll(filepath.Dir(bin), 0o755))
	must(t, os.WriteFile(bin, fakeELF(elf.EM_AARCH64), 0o755))
	if err := CheckBinary(bin, "amd64"); !errors.Is(err, ErrWrongArch) || !strings.Contains(err.Error(), "EM_AARCH64") {
		t.Errorf("CheckBinary = %v, want ErrWrongArch naming EM_AARCH64", err)
	}
	if err := CheckRoot(root, "amd64"); !errors.Is(err, ErrWrongArch) {
		t.Errorf("CheckRoot = %v, want ErrWrongArch", err)
	}
	if err := CheckBinary(bin, "arm64"); err != nil {
		t.Errorf("CheckBinary for its own arch = %v", err)
	}
}

// A mirror that does not serve the suite: one clear error, nothing left
// that looks like an index.
func TestSuiteNotServed(t *testing.T) {
	if _, err := exec.LookPath("apt-get"); err != nil {
		t.Skip("apt-get missing: not a Debian host")
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	in := &Installer{CacheDir: t.TempDir(), Mirror: srv.URL + "/debian"}
	_, err := in.Install(context.Background(), filepath.Join(t.TempDir(), "root"), Request{Suite: "trixie", Packages: []string{"iperf3"}})
	if !errors.Is(err, ErrSuiteUnserved) {
		t.Fatalf("err = %v, want ErrSuiteUnserved", err)
	}
	if !strings.Contains(err.Error(), "trixie") {
		t.Errorf("error does not name the suite: %v", err)
	}
}

func TestRefusesForeignRoot(t *testing.T) {
	root := t.TempDir()
	must(t, os.WriteFile(filepath.Join(root, "precious"), []byte("x"), 0o644))
	in := &Installer{CacheDir: t.TempDir()}
	_, err := in.Install(context.Background(), root, Request{Suite: "sid", Packages: []string{"iperf3"}})
	if err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Fatalf("err = %v, want a refusal", err)
	}
	if _, err := os.Stat(filepath.Join(root, "precious")); err != nil {
		t.Fatal("a foreign root was touched")
	}
}

// The lead's benchmark needs iperf3 >= 3.16; bookworm has 3.12. This
// unpacks trixie's privately and runs it on this host.
func TestInstallIperf3FromTrixie(t *testing.T) {
	mirrortest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cache, err := home.Dir()
	must(t, err)
	in := &Installer{CacheDir: cache}
	root := filepath.Join(t.TempDir(), "iperf3")
	res, err := in.Install(ctx, root, Request{Suite: "trixie", Packages: []string{"iperf3"}})
	if err != nil {
		t.Fatal(err)
	}
	bin, err := res.Binary("iperf3")
	must(t, err)
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v: %s", bin, err, out)
	}
	m := regexp.MustCompile(`iperf 3\.(\d+)`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("no version in %q", out)
	}
	if minor, _ := strconv.Atoi(m[1]); minor < 16 {
		t.Errorf("iperf3 3.%d, want >= 3.16", minor)
	}
	// It loads trixie's libc from the root, not the host's.
	f, err := elf.Open(bin)
	must(t, err)
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			p.ReadAt(b, 0)
			if !strings.HasPrefix(string(b), root) {
				t.Errorf("interpreter %q is outside the root", b)
			}
		}
	}
	// A second install of the same request reuses the root.
	start := time.Now()
	res2, err := in.Install(ctx, root, Request{Suite: "trixie", Packages: []string{"iperf3"}})
	if err != nil || res2.Version() != res.Version() {
		t.Fatalf("reinstall: %v", err)
	}
	t.Logf("iperf3 %s from trixie: first install %.1fs, reuse %s", res.Version(), res.Seconds, time.Since(start).Round(time.Millisecond))

	// The short forms the lab calls.
	p, err := Install(ctx, root, "trixie", "iperf3")
	if err != nil || p != bin {
		t.Errorf("Install = %q, %v; want %q", p, err, bin)
	}
	t.Setenv("LINERATE_HOME", t.TempDir())
	os.Symlink(filepath.Join(cache, "apt"), filepath.Join(os.Getenv("LINERATE_HOME"), "apt")) // reuse the cached lists and .debs
	p, err = Tool(ctx, "trixie", "iperf3")
	if err != nil {
		t.Fatalf("Tool: %v", err)
	}
	if out, err := exec.Command(p, "--version").CombinedOutput(); err != nil || !strings.Contains(string(out), "iperf 3.") {
		t.Errorf("%s --version: %v: %s", p, err, out)
	}
}

// A package whose download does not match the index is a broken download,
// and the bad file is not kept.
func TestBrokenDownload(t *testing.T) {
	mirrortest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// bookworm-backports: a small index, fetched into a fresh cache so the
	// file is really downloaded.
	a, err := NewApt(t.TempDir(), "bookworm-backports")
	must(t, err)
	must(t, a.Update(ctx, time.Hour))
	ix, err := a.Index()
	must(t, err)
	var small *Package
	for _, l := range ix.packages {
		if p := l[0]; p.Size > 0 && (small == nil || p.Size < small.Size) {
			small = p
		}
	}
	p := *small
	p.SHA256 = strings.Repeat("0", 64) // what a corrupted transfer looks like
	_, err = a.Download(ctx, []*Package{&p})
	if !errors.Is(err, ErrBrokenDownload) {
		t.Fatalf("err = %v, want ErrBrokenDownload", err)
	}
	if _, err := os.Stat(filepath.Join(a.DebDir(), p.DebFile())); err == nil {
		t.Error("the broken file was kept")
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
