package netns

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/infra"
)

// needRoot skips outside CI when namespaces cannot be made; in CI (root)
// a missing capability fails.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("ip"); err != nil {
			t.Fatalf("ip (iproute2) missing: run .ci/setup: %v", err)
		}
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("network namespaces need root, and CI runs as root")
	}
	t.Skip("network namespaces need root (CI runs these)")
}

// upPair brings a pair up and takes it down in t.Cleanup.
func upPair(t *testing.T, queues int) (*Provider, infra.Pair) {
	t.Helper()
	needRoot(t)
	p := &Provider{}
	t.Cleanup(func() {
		if err := p.Down(context.Background()); err != nil {
			t.Errorf("down: %v", err)
		}
	})
	pair, err := p.Up(context.Background(), infra.Spec{Campaign: "test", Queues: queues})
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	return p, pair
}

func TestPairAddressesQueuesAndTraffic(t *testing.T) {
	_, pair := upPair(t, 2)
	ctx := context.Background()
	srv, cli := pair.Server.(*Host), pair.Client.(*Host)
	if pair.Server.DataAddr() != ServerAddr || pair.Client.DataAddr() != ClientAddr {
		t.Fatalf("data addresses %v, %v; want %v, %v", pair.Server.DataAddr(), pair.Client.DataAddr(), ServerAddr, ClientAddr)
	}
	for _, tc := range []struct {
		h   *Host
		dev string
	}{{srv, "lr-srv"}, {cli, "lr-cli"}} {
		f, err := tc.h.Facts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.NICWithAddr(tc.h.DataAddr()); got != tc.dev {
			t.Errorf("%s: NIC with %v is %q, want %q (facts %+v)", tc.h.Name(), tc.h.DataAddr(), got, tc.dev, f.NICs)
		}
		if f.NICWithAddr(ServerAddr) != "" && f.NICWithAddr(ClientAddr) != "" {
			t.Errorf("%s sees both addresses: the namespaces are not separate", tc.h.Name())
		}
		// Queue counts set at creation show in the namespace's own /sys.
		out, err := tc.h.Run(ctx, "ls", "/sys/class/net/"+tc.dev+"/queues")
		if err != nil {
			t.Fatal(err)
		}
		q := strings.Fields(string(out))
		if strings.Join(q, " ") != "rx-0 rx-1 tx-0 tx-1" {
			t.Errorf("%s queues %v, want rx-0 rx-1 tx-0 tx-1", tc.dev, q)
		}
		out, err = tc.h.Run(ctx, "ip", "-o", "link", "show", "lo")
		if err != nil || !strings.Contains(string(out), "UP") {
			t.Errorf("%s: loopback not up: %s %v", tc.h.Name(), out, err)
		}
	}

	// In-process: listen in the server namespace, dial from the client one.
	l, err := srv.Listen("tcp", ServerAddr.String()+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			io.Copy(c, c)
			c.Close()
		}
	}()
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := cli.DialContext(dctx, "tcp", l.Addr().String())
	if err != nil {
		t.Fatalf("dial server from client namespace: %v", err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	msg := []byte("across the veth")
	c.Write(msg)
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("echo: %q %v", got, err)
	}
	if la := c.LocalAddr().(*net.TCPAddr); la.IP.String() != ClientAddr.String() {
		t.Errorf("client side address %v, want %v", la.IP, ClientAddr)
	}
	c.Close()

	// From this process's own namespace the pair is unreachable.
	if c, err := net.DialTimeout("tcp", l.Addr().String(), 300*time.Millisecond); err == nil {
		c.Close()
		t.Errorf("reached %v from the root namespace", l.Addr())
	}

	// A child process in the client namespace reaches the server too.
	if out, err := cli.Run(ctx, "ping", "-c", "1", "-W", "2", ServerAddr.String()); err != nil {
		if _, lerr := exec.LookPath("ping"); lerr == nil {
			t.Errorf("ping server from client: %v: %s", err, out)
		}
	}
}

func TestDownRemovesNamespacesAndProcesses(t *testing.T) {
	p, pair := upPair(t, 0)
	srv := pair.Server.(*Host)
	cmd := srv.Command(context.Background(), "sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if err := p.Down(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, h := range []infra.Host{pair.Server, pair.Client} {
		if _, err := os.Stat(filepath.Join(RunDir, h.(*Host).Namespace)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("namespace %s still there after Down: %v", h.(*Host).Namespace, err)
		}
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("process inside the namespace survived Down")
	}
	if err := p.Down(context.Background()); err != nil {
		t.Errorf("second Down: %v", err)
	}
}

// A crashed run leaves lr-<dead pid>-… behind; the next Up removes it,
// and a live process's namespaces are left alone.
func TestLeftoversOfCrashedRunsAreRemoved(t *testing.T) {
	needRoot(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	crashed := fmt.Sprintf("%s%d-7-srv", Prefix, dead.Process.Pid)
	live := fmt.Sprintf("%s%d-7-srv", Prefix, os.Getppid()) // our parent is alive
	for _, n := range []string{crashed, live} {
		h, err := createNamed(n)
		if err != nil {
			t.Fatal(err)
		}
		h.Close()
		t.Cleanup(func() { remove(n) })
	}
	orphan := exec.Command("ip", "netns", "exec", crashed, "sleep", "60")
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() { orphan.Wait(); close(waited) }()
	// ip enters the namespace after it started: wait for that, or a
	// cleanup that runs first finds nothing inside to kill.
	nsFile, err := os.Stat(filepath.Join(RunDir, crashed))
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		st, err := os.Stat(fmt.Sprintf("/proc/%d/ns/net", orphan.Process.Pid))
		if err == nil && os.SameFile(st, nsFile) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the orphan did not enter %s within 5s", crashed)
		}
	}

	left, err := Leftovers()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range left {
		names = append(names, l.Name)
	}
	if !contains(names, crashed) || contains(names, live) {
		t.Fatalf("leftovers %v: want %s and not %s", names, crashed, live)
	}
	_, pair := upPair(t, 0) // Up cleans up first
	_ = pair
	if _, err := os.Stat(filepath.Join(RunDir, crashed)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("crashed run's namespace survived Up: %v", err)
	}
	if _, err := os.Stat(filepath.Join(RunDir, live)); err != nil {
		t.Errorf("a live process's namespace was removed: %v", err)
	}
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Error("orphan process in the crashed namespace was not killed")
	}
}

func TestUpCancelledLeavesNothing(t *testing.T) {
	needRoot(t)
	before, _ := Owned()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := &Provider{}
	if _, err := p.Up(ctx, infra.Spec{Campaign: "test"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("up with a cancelled context: %v", err)
	}
	after, _ := Owned()
	for _, n := range after {
		if !contains(before, n) && strings.HasPrefix(n, fmt.Sprintf("%s%d-", Prefix, os.Getpid())) {
			t.Errorf("namespace %s left after a cancelled Up", n)
		}
	}
}

func TestExec(t *testing.T) {
	needRoot(t)
	ctx := context.Background()
	p, pair := upPair(t, 0)
	_ = p
	local, _ := Local{}.Up(ctx, infra.Spec{Campaign: "test"})
	for _, h := range []infra.Host{local.Server, pair.Client} {
		t.Run(h.Name(), func(t *testing.T) {
			_, err := h.Run(ctx, "sh", "-c", "echo oops >&2; exit 3")
			var ee *infra.ExitError
			if !errors.As(err, &ee) || ee.Code != 3 || ee.Tail != "oops" {
				t.Errorf("exit 3: %#v", err)
			}
			// A command cut off by its timeout, not one that ran out: sleep
			// 10 ending by itself would be no error.
			err = h.Exec(ctx, infra.Command{Argv: []string{"sleep", "10"}, Timeout: 200 * time.Millisecond})
			if !errors.Is(err, infra.ErrTimeout) {
				t.Errorf("timeout: %v", err)
			}
			// Output streams: the first line arrives while the command
			// runs. The command waits for a file the test makes only once
			// it has read that line, so output held until the end would
			// reach the test only when the command is killed (an error).
			marker := filepath.Join(t.TempDir(), "go-on")
			pr, pw := io.Pipe()
			errc := make(chan error, 1)
			go func() {
				script := "echo first; while [ ! -e " + marker + " ]; do sleep 0.05; done; echo second"
				errc <- h.Exec(ctx, infra.Command{Argv: []string{"sh", "-c", script}, Stdout: pw, Timeout: 30 * time.Second})
				pw.Close()
			}()
			buf := make([]byte, 6)
			if _, err := io.ReadFull(pr, buf); err != nil || string(buf) != "first\n" {
				t.Fatalf("first line %q %v", buf, err)
			}
			if err := os.WriteFile(marker, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			rest, _ := io.ReadAll(pr)
			if err := <-errc; err != nil || string(rest) != "second\n" {
				t.Errorf("rest %q %v", rest, err)
			}
			out, err := h.Run(ctx, "sh", "-c", "echo $LR_X")
			_ = out
			if err != nil {
				t.Fatal(err)
			}
			var env bytes.Buffer
			if err := h.Exec(ctx, infra.Command{Argv: []string{"sh", "-c", "echo $LR_X"}, Env: []string{"LR_X=42"}, Stdout: &env}); err != nil || env.String() != "42\n" {
				t.Errorf("env: %q %v", env.String(), err)
			}
			if err := h.Exec(ctx, infra.Command{}); err == nil {
				t.Error("empty argv accepted")
			}
			dir := t.TempDir()
			src := filepath.Join(dir, "a")
			os.WriteFile(src, []byte("payload"), 0o600)
			if err := h.Put(ctx, src, filepath.Join(dir, "b"), 0o755); err != nil {
				t.Fatal(err)
			}
			if st, err := os.Stat(filepath.Join(dir, "b")); err != nil || st.Mode().Perm() != 0o755 {
				t.Errorf("put: %v %v", st, err)
			}
			bin, err := h.Linerate(ctx)
			if err != nil || bin == "" {
				t.Errorf("linerate binary %q %v", bin, err)
			}
		})
	}
	if local.Server.DataAddr().String() != "127.0.0.1" {
		t.Errorf("local data address %v", local.Server.DataAddr())
	}
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// A kept pair outlives its process: it is no leftover, is found again by
// name, refuses a second Up, and goes with Down.
func TestKeptPair(t *testing.T) {
	needRoot(t)
	ctx := context.Background()
	p := &Provider{Keep: "kept-test"}
	t.Cleanup(func() { p.Down(ctx) })
	if _, err := p.Up(ctx, infra.Spec{Campaign: "kept-test"}); err != nil {
		t.Fatal(err)
	}
	if _, err := (&Provider{Keep: "kept-test"}).Up(ctx, infra.Spec{Campaign: "kept-test"}); err == nil || !strings.Contains(err.Error(), "already up") {
		t.Errorf("second Up of a kept pair: %v", err)
	}
	if _, err := Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	again := &Provider{Keep: "kept-test"}
	pair, err := again.Pair()
	if err != nil {
		t.Fatalf("kept pair not found after cleanup: %v", err)
	}
	if out, err := pair.Server.Run(ctx, "ip", "-o", "addr", "show", "lr-srv"); err != nil || !strings.Contains(string(out), "198.18.0.1/30") {
		t.Errorf("kept server: %s %v", out, err)
	}
	if err := again.Down(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := again.Pair(); err == nil {
		t.Error("pair still found after Down")
	}
}

// Three clients: each in its own namespace on its own link, each reaches
// the server's 198.18.0.1 from its own address, none sees another's, and
// Down removes all four namespaces.
func TestSeveralClients(t *testing.T) {
	needRoot(t)
	ctx := context.Background()
	p := &Provider{}
	t.Cleanup(func() { p.Down(ctx) })
	pair, err := p.Up(ctx, infra.Spec{Campaign: "clients", Clients: 3})
	if err != nil {
		t.Fatal(err)
	}
	hosts := pair.ClientHosts()
	if len(hosts) != 3 || hosts[0] != pair.Client {
		t.Fatalf("clients %v, want 3 with Client first", hosts)
	}
	srv := pair.Server.(*Host)
	l, err := srv.Listen("tcp", ServerAddr.String()+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			// Echo the peer's address: the server saw this client's own.
			io.WriteString(c, c.RemoteAddr().(*net.TCPAddr).IP.String())
			c.Close()
		}
	}()
	seen := map[string]bool{}
	for i, h := range hosts {
		_, want := LinkAddrs(i + 1)
		if h.DataAddr() != want || h.Name() != clientLabel(i+1) {
			t.Errorf("client %d: %s at %v, want %s at %v", i+1, h.Name(), h.DataAddr(), clientLabel(i+1), want)
		}
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		c, err := h.(*Host).DialContext(dctx, "tcp", l.Addr().String())
		cancel()
		if err != nil {
			t.Fatalf("%s: dial the server: %v", h.Name(), err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		got, _ := io.ReadAll(c)
		c.Close()
		if string(got) != want.String() {
			t.Errorf("%s: the server saw %q, want %v", h.Name(), got, want)
		}
		seen[h.(*Host).Namespace] = true
		f, err := h.Facts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for j := range hosts {
			if _, other := LinkAddrs(j + 1); j != i && f.NICWithAddr(other) != "" {
				t.Errorf("%s sees client %d's address", h.Name(), j+1)
			}
		}
	}
	out, err := srv.Run(ctx, "ip", "-o", "link", "show")
	if err != nil {
		t.Fatal(err)
	}
	for _, dev := range ServerDevices(3) {
		if !strings.Contains(string(out), " "+dev+"@") {
			t.Errorf("server namespace lacks %s:\n%s", dev, out)
		}
	}
	if len(seen) != 3 {
		t.Errorf("client namespaces %v", seen)
	}
	if err := p.Down(ctx); err != nil {
		t.Fatal(err)
	}
	for _, h := range append([]infra.Host{pair.Server}, hosts...) {
		if _, err := os.Stat(filepath.Join(RunDir, h.(*Host).Namespace)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there after Down: %v", h.(*Host).Namespace, err)
		}
	}
}

// What a netns host offers beyond infra.Host: a named namespace is entered
// with ip netns exec, this process's own namespace needs nothing; either
// way the files are this machine's.
func TestHostIsEnteredAndSharesFiles(t *testing.T) {
	for _, tc := range []struct {
		ns   string
		want string
	}{{"", ""}, {"lr-1-0-srv", "ip netns exec lr-1-0-srv"}} {
		var h infra.Host = &Host{Namespace: tc.ns}
		e, ok := h.(infra.Entered)
		if !ok {
			t.Fatalf("%q: not an infra.Entered", tc.ns)
		}
		if got := strings.Join(e.Enter(), " "); got != tc.want || (tc.ns == "" && e.Enter() != nil) {
			t.Errorf("%q: Enter %q, want %q", tc.ns, got, tc.want)
		}
		if !infra.FilesHere(h) {
			t.Errorf("%q: files not shared", tc.ns)
		}
	}
}
