package servers

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/home"
	"github.com/linerate/linerate/infra/internal/mirrortest"
)

func TestParseSelector(t *testing.T) {
	tests := []struct {
		in      string
		kind    infra.Kind
		ver     string
		bad     bool
		up, deb string
		matches bool
	}{
		{in: "valkey@9.1", kind: infra.Valkey, ver: "9.1", up: "9.1.2", deb: "9.1.2-1", matches: true},
		{in: "valkey@9.1", kind: infra.Valkey, ver: "9.1", up: "9.10.0", deb: "9.10.0-1", matches: false},
		{in: "redis@7.0", kind: infra.Redis, ver: "7.0", up: "7.0.15", deb: "5:7.0.15-1~deb12u7", matches: true},
		{in: "Redis", kind: infra.Redis, up: "8.0.6", matches: true},
		{in: "redis@5:7.0.15-1~deb12u7", kind: infra.Redis, ver: "5:7.0.15-1~deb12u7", up: "7.0.15", deb: "5:7.0.15-1~deb12u7", matches: true},
		{in: "memcached@1.6", bad: true},
		{in: "valkey@9 1", bad: true},
	}
	for _, tc := range tests {
		sel, err := ParseSelector(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("%q accepted", tc.in)
			}
			continue
		}
		if err != nil || sel.Kind != tc.kind || sel.Version != tc.ver {
			t.Errorf("%q = %+v, %v", tc.in, sel, err)
			continue
		}
		if got := sel.Matches(tc.up, tc.deb); got != tc.matches {
			t.Errorf("%q matches %s/%s = %v", tc.in, tc.up, tc.deb, got)
		}
	}
}

// testStore is a temporary store that shares the user's apt cache (lists
// and downloaded .debs), so a second run does not download again.
func testStore(t *testing.T) *Store {
	t.Helper()
	mirrortest.Require(t)
	st, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cache, err := home.Dir()
	if err != nil {
		t.Fatal(err)
	}
	st.Installer.CacheDir = cache
	if testing.Verbose() {
		st.Log = os.Stderr
	}
	return st
}

// The acceptance test: valkey 9.1 and redis 7.0 installed into a
// temporary store, started side by side pinned, versions and pinning
// checked, one killed with SIGKILL and the launcher reporting it.
func TestInstallStartKill(t *testing.T) {
	st := testStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cpu := strconv.Itoa(runtime.NumCPU() - 1)

	type started struct {
		inst *Installed
		srv  infra.Server
	}
	var running []started
	defer func() {
		for _, r := range running {
			r.srv.Stop(context.Background())
		}
	}()
	for _, s := range []string{"valkey@9.1", "redis@7.0"} {
		sel, _ := ParseSelector(s)
		inst, err := st.Install(ctx, sel, InstallOptions{})
		if err != nil {
			t.Fatalf("install %s: %v", s, err)
		}
		t.Logf("%s: %s from %s in %.1fs, %d MB", s, inst.DebVersion, inst.Suite, inst.Seconds, inst.SizeBytes>>20)
		if !strings.HasPrefix(inst.Version, sel.Version+".") {
			t.Errorf("%s resolved to %s", s, inst.Version)
		}
		// The install check also started it TLS-only and PINGed it over
		// TLS; the version's facts say it serves TLS.
		if inst.TLS == nil || !*inst.TLS || inst.TLSError != "" {
			t.Errorf("%s: tls %v (%s), want it checked and true", s, inst.TLS, inst.TLSError)
		}
		// Idempotent: a second install returns the same version at once.
		again, err := st.Install(ctx, sel, InstallOptions{})
		if err != nil || again.ID != inst.ID {
			t.Errorf("reinstall %s: %v, %v", s, again, err)
		}
		srv, err := inst.Launcher("MALLOC_CONF=oversize_threshold:0").Start(ctx, infra.ServerSettings{CPUs: cpu, IOThreads: 2, LogDir: t.TempDir()})
		if err != nil {
			t.Fatalf("start %s: %v", s, err)
		}
		running = append(running, started{inst, srv})
		f := srv.Facts()
		if got := f.InfoServer["valkey_version"]; sel.Kind == infra.Valkey && got != inst.Version {
			t.Errorf("valkey_version %q, want %q", got, inst.Version)
		}
		if got := f.InfoServer["redis_version"]; sel.Kind == infra.Redis && got != inst.Version {
			t.Errorf("redis_version %q, want %q", got, inst.Version)
		}
		if f.Threads[0].Name != string(sel.Kind)+"-server" {
			t.Errorf("main thread named %q, want %s-server", f.Threads[0].Name, sel.Kind)
		}
		for _, th := range f.Threads {
			if th.CPUs != cpu {
				t.Errorf("%s thread %s on %s, want %s", s, th.Name, th.CPUs, cpu)
			}
		}
		// It runs on its own libc, from the store, not the host's.
		maps, _ := os.ReadFile("/proc/" + strconv.Itoa(f.PID) + "/maps")
		if !strings.Contains(string(maps), filepath.Join(inst.Root, "usr/lib")) && !strings.Contains(string(maps), filepath.Join(inst.Root, "lib")) {
			t.Errorf("%s does not map libraries from its root", s)
		}
		for _, line := range strings.Split(string(maps), "\n") {
			if strings.Contains(line, "libc.so.6") && !strings.Contains(line, inst.Root) {
				t.Errorf("%s maps the host's libc: %s", s, line)
			}
		}
		if id := f.Identity.String(); !strings.Contains(id, inst.DebVersion) || !strings.Contains(id, "MALLOC_CONF=oversize_threshold:0") {
			t.Errorf("identity %q lacks the build or env", id)
		}
	}
	list, err := st.List()
	if err != nil || len(list) != 2 {
		t.Fatalf("list = %v, %v", list, err)
	}

	// SIGKILL the valkey server: the launcher reports it.
	p, _ := os.FindProcess(running[0].srv.Facts().PID)
	p.Kill()
	select {
	case e := <-running[0].srv.Exited():
		if e.Expected || e.Signal != "SIGKILL" {
			t.Errorf("exit = %+v, want an unexpected SIGKILL", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SIGKILL not reported")
	}
	// The other one is unaffected and stops cleanly.
	if err := running[1].srv.Stop(ctx); err != nil {
		t.Errorf("stop redis: %v", err)
	}

	// path and remove.
	sel, _ := ParseSelector("redis@7.0")
	inst, err := st.Find(sel, "")
	if err != nil || inst.Server != running[1].inst.Server {
		t.Errorf("find = %v, %v", inst, err)
	}
	if l, _, err := st.Launcher(sel, "", "MALLOC_CONF=x"); err != nil || l.Binary != inst.Server || l.Identity.Env[0] != "MALLOC_CONF=x" {
		t.Errorf("launcher = %+v, %v", l, err)
	}
	if _, err := st.Remove(sel, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Find(sel, ""); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("after remove: %v, want ErrNotInstalled", err)
	}
	if _, err := os.Stat(running[1].inst.Root); !os.IsNotExist(err) {
		t.Error("remove left the files")
	}
}

// Faults leave the store consistent: unknown versions are refused with
// what is available, and an interrupted install is neither listed nor in
// the way of the next one.
func TestStoreFaults(t *testing.T) {
	st := testStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sel, _ := ParseSelector("valkey@7.9")
	_, err := st.Install(ctx, sel, InstallOptions{})
	if !errors.Is(err, ErrNoSuchVersion) || !strings.Contains(err.Error(), "available: 9.1") {
		t.Errorf("valkey@7.9: %v, want ErrNoSuchVersion listing what is available", err)
	}
	// A build from a suite that does not carry it.
	sel, _ = ParseSelector("valkey@9.1")
	if _, err := st.Install(ctx, sel, InstallOptions{Suite: "trixie"}); !errors.Is(err, ErrNoSuchVersion) {
		t.Errorf("valkey@9.1 from trixie: %v, want ErrNoSuchVersion", err)
	}
	// A runtime too old for the build: refused, naming the library.
	if _, err := st.Install(ctx, sel, InstallOptions{Runtime: "bookworm"}); err == nil || !strings.Contains(err.Error(), "libc6") {
		t.Errorf("valkey@9.1 on bookworm's libc: %v, want a refusal naming libc6", err)
	}
	// An interrupted install: the directory exists, without install.json.
	b, err := st.Resolve(ctx, sel, "")
	if err != nil {
		t.Fatal(err)
	}
	partial := filepath.Join(st.Dir, "servers", versionID(b.Kind, b.DebVersion, b.Suite, b.Suite), "root")
	os.MkdirAll(filepath.Join(partial, "usr/bin"), 0o755)
	os.WriteFile(filepath.Join(partial, ".debpkg-partial"), nil, 0o644)
	if l, _ := st.List(); len(l) != 0 {
		t.Fatalf("a partial install is listed: %v", l)
	}
	inst, err := st.Install(ctx, sel, InstallOptions{})
	if err != nil {
		t.Fatalf("install over a partial one: %v", err)
	}
	if l, _ := st.List(); len(l) != 1 || l[0].ID != inst.ID {
		t.Errorf("list = %v", l)
	}
	// Nothing was left behind by the refused installs.
	ents, _ := os.ReadDir(filepath.Join(st.Dir, "servers"))
	for _, e := range ents {
		if e.IsDir() && e.Name() != inst.ID {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}
