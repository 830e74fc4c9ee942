package launch

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linerate/linerate/infra"
)

var update = flag.Bool("update", false, "rewrite golden files")

// fakeDocker answers docker commands like a host running the image would,
// and records them. `docker wait` blocks until the container "exits".
type fakeDocker struct {
	mu      sync.Mutex
	calls   []string
	pings   int
	exit    chan string
	waits   int
	running bool
}

func newFakeDocker() *fakeDocker { return &fakeDocker{exit: make(chan string, 1)} }

func (f *fakeDocker) end(code string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.running {
		f.running = false
		f.exit <- code
	}
}

func (f *fakeDocker) Run(ctx context.Context, argv ...string) ([]byte, error) {
	quoted := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " *&>") {
			a = "'" + a + "'"
		}
		quoted[i] = a
	}
	line := strings.Join(quoted, " ")
	if argv[1] == "wait" {
		f.mu.Lock()
		f.waits++
		f.mu.Unlock()
		select {
		case code := <-f.exit:
			return []byte(code + "\n"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	f.calls = append(f.calls, line)
	f.mu.Unlock()
	switch argv[1] {
	case "run":
		f.mu.Lock()
		f.running = true
		f.mu.Unlock()
		return []byte("0123abcd\n"), nil
	case "rm", "stop":
		f.end("137")
		return nil, nil
	case "logs":
		return []byte("1:M * Valkey version=9.1.0\n1:M * Ready to accept connections tcp\n"), nil
	case "inspect":
		return []byte("4242\n"), nil
	case "exec":
		// docker exec NAME CLI [-h HOST] -p PORT args…
		rest := argv[4:]
		for len(rest) > 0 && rest[0] != "-p" {
			rest = rest[1:]
		}
		if len(rest) < 2 {
			return nil, fmt.Errorf("fake docker: no -p in %s", line)
		}
		cmd := strings.Join(rest[2:], " ")
		switch {
		case cmd == "PING":
			f.mu.Lock()
			f.pings++
			n := f.pings
			f.mu.Unlock()
			if n == 1 { // not listening yet
				return nil, errors.New("exit status 1: Could not connect")
			}
			return []byte("PONG\n"), nil
		case cmd == "INFO server":
			return []byte("# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:9.1.0\r\n"), nil
		case cmd == "INFO memory":
			return []byte("# Memory\r\nused_memory:1048576\r\nmem_allocator:jemalloc-5.3.0\r\n"), nil
		case strings.HasPrefix(cmd, "CONFIG GET "):
			k := argv[len(argv)-1]
			v := map[string]string{"io-threads": "16", "maxmemory": "64424509440", "save": "", "appendonly": "no", "protected-mode": "no"}[k]
			return []byte(k + "\n" + v + "\n"), nil
		case cmd == "SHUTDOWN NOSAVE":
			f.end("0")
			return nil, errors.New("exit status 1: Error: Server closed the connection")
		}
	}
	return nil, fmt.Errorf("fake docker: unexpected %s", line)
}

func (f *fakeDocker) transcript() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.calls, "\n") + "\n"
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update rewrites it)\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

// The study's settings, started, checked and stopped through the host's
// runner: the command sequence is the recorded expectation.
func TestContainerLifecycle(t *testing.T) {
	fake := newFakeDocker()
	c := &Container{Host: fake, Image: "valkey/valkey:9.1.0", HostAddr: "198.18.0.1", Poll: time.Millisecond, LogDir: t.TempDir()}
	s := infra.ServerSettings{IOThreads: 16, MaxMemory: "60gb", CPUs: "8-23"}
	argv, err := c.RunArgv(s)
	if err != nil {
		t.Fatal(err)
	}
	// Host networking with protected mode off: the bind to the data
	// address is all that keeps the server off the host's other interfaces.
	want := "docker run --detach --name linerate-valkey-6379 --network host --cpuset-cpus 8-23 --ulimit nofile=32768:65536 " +
		"valkey/valkey:9.1.0 --save  --appendonly no --io-threads 16 --protected-mode no --maxmemory 60gb --bind 198.18.0.1"
	if got := strings.Join(argv, " "); got != want {
		t.Errorf("argv = %s\nwant   %s", got, want)
	}
	ctx := context.Background()
	srv, err := c.Start(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	f := srv.Facts()
	if f.Identity.Version != "9.1.0" || f.PID != 4242 || f.Config["io-threads"] != "16" || f.InfoMemory["mem_allocator"] != "jemalloc-5.3.0" {
		t.Errorf("facts = %+v", f)
	}
	if srv.Addr() != "198.18.0.1:6379" {
		t.Errorf("addr = %s", srv.Addr())
	}
	if err := srv.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, open := <-srv.Exited(); open {
		t.Error("a stopped server reported an unexpected exit")
	}
	if b, _ := os.ReadFile(srv.LogPath()); !strings.Contains(string(b), "Ready to accept") {
		t.Errorf("log not kept: %q", b)
	}
	golden(t, "container_lifecycle.txt", fake.transcript())
}

// A container killed under the lab (OOM killer, operator) is reported on
// Exited with its signal and log tail.
func TestContainerKilled(t *testing.T) {
	fake := newFakeDocker()
	c := &Container{Host: fake, Image: "valkey/valkey:9.1.0", Poll: time.Millisecond, LogDir: t.TempDir()}
	srv, err := c.Start(context.Background(), infra.ServerSettings{})
	if err != nil {
		t.Fatal(err)
	}
	fake.end("137")
	select {
	case e := <-srv.Exited():
		if e.Expected || e.Signal != "SIGKILL" || !strings.Contains(e.LogTail, "Ready to accept") {
			t.Errorf("exit = %+v, want an unexpected SIGKILL with the log tail", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the kill was not reported")
	}
	if err := srv.Stop(context.Background()); err != nil {
		t.Errorf("stop after the end: %v", err)
	}
}

// An image whose version differs from what it reports is refused.
func TestContainerVersionMismatch(t *testing.T) {
	fake := newFakeDocker()
	c := &Container{Host: fake, Image: "valkey/valkey:8.1.1", Poll: time.Millisecond, LogDir: t.TempDir()}
	_, err := c.Start(context.Background(), infra.ServerSettings{})
	if err == nil || !strings.Contains(err.Error(), "reports version 9.1.0, expected 8.1.1") {
		t.Fatalf("err = %v, want a version mismatch", err)
	}
}

func TestContainerRefusals(t *testing.T) {
	yes := true
	c := &Container{Host: newFakeDocker(), Image: "valkey/valkey:8.1.1"}
	_, err := c.Start(context.Background(), infra.ServerSettings{IOThreadsDoReads: &yes})
	if !errors.Is(err, infra.ErrUnsupportedSetting) {
		t.Errorf("io-threads-do-reads on valkey 8.1: err = %v", err)
	}
	if _, err := c.Start(context.Background(), infra.ServerSettings{TLS: true}); !errors.Is(err, infra.ErrUnsupportedSetting) || !strings.Contains(err.Error(), "tls with a container image") {
		t.Errorf("tls with an image: err = %v", err)
	}
	c = &Container{Host: newFakeDocker(), Image: "ghcr.io/microsoft/garnet:1.0"}
	if _, err := c.Start(context.Background(), infra.ServerSettings{}); err == nil || !strings.Contains(err.Error(), "garnet") {
		t.Errorf("garnet container: err = %v", err)
	}
}

// An image runs with host networking and protected mode off, as the study
// ran it: without a bind it would serve every interface of the host. The
// bind is the settings' address, else the host address, else loopback,
// and readiness and facts are asked at that address.
func TestContainerBindsOneAddress(t *testing.T) {
	for _, tc := range []struct {
		name           string
		bind, hostAddr string
		want           string
	}{
		{"nothing said", "", "", "127.0.0.1"},
		{"the data address", "198.18.0.1", "", "198.18.0.1"},
		{"the host address", "", "198.18.0.1", "198.18.0.1"},
		{"both", "198.18.0.1", "198.18.0.1", "198.18.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFakeDocker()
			c := &Container{Host: fake, Image: "valkey/valkey:9.1.0", HostAddr: tc.hostAddr, Poll: time.Millisecond, LogDir: t.TempDir()}
			srv, err := c.Start(context.Background(), infra.ServerSettings{Bind: tc.bind})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Stop(context.Background())
			if srv.Addr() != tc.want+":6379" {
				t.Errorf("addr %s, want %s:6379", srv.Addr(), tc.want)
			}
			for _, line := range strings.Split(fake.transcript(), "\n") {
				switch {
				case strings.HasPrefix(line, "docker run "):
					if !strings.HasSuffix(line, " --bind "+tc.want) {
						t.Errorf("run without the bind to %s: %s", tc.want, line)
					}
				case strings.HasPrefix(line, "docker exec "):
					if !strings.Contains(line, " -h "+tc.want+" -p 6379 ") {
						t.Errorf("cli not at %s: %s", tc.want, line)
					}
				}
			}
		})
	}
}
