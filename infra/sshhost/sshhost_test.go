package sshhost

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/netns"
	"github.com/linerate/linerate/infra/sshhost/sshtest"
	"github.com/linerate/linerate/lab/labtest"
	"golang.org/x/crypto/ssh"
)

const sshPort = sshtest.Port

func need(t *testing.T, ok bool, why string) { t.Helper(); sshtest.Need(t, ok, why) }

// lab is the shared sshd pair (sshtest) seen from this package's tests.
type lab struct {
	*sshtest.Lab
	pair       infra.Pair
	dir        string
	clientKey  ssh.Signer
	hostKeys   map[string]ssh.PublicKey
	dialFromNS func(ctx context.Context, network, addr string) (net.Conn, error)
}

func newLab(t *testing.T) *lab {
	t.Helper()
	l := sshtest.New(t, "sshtest")
	return &lab{Lab: l, pair: l.Pair, dir: l.Dir, clientKey: l.ClientKey, hostKeys: l.HostKeys, dialFromNS: l.Dial}
}

func (l *lab) config(h infra.Host, knownHosts string) Config {
	return Config{
		Label:      h.Name(),
		Addr:       net.JoinHostPort(h.DataAddr().String(), sshPort),
		User:       "root",
		Signer:     l.clientKey,
		KnownHosts: knownHosts,
		Dist:       filepath.Join(l.dir, "dist"),
		RemoteDir:  filepath.Join(l.dir, "remote-"+h.Name()),
		Dial:       l.dialFromNS,
	}
}

// A short campaign over SSH: upload the binary, run bench on the client
// host against a redis-server in the server namespace, collect the JSON.
func TestUploadAndBenchOverSSH(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	dist := labtest.Dist(t)
	os.Symlink(dist, filepath.Join(l.dir, "dist"))
	p := &Provider{Server: l.config(l.pair.Server, ""), Client: l.config(l.pair.Client, "")}
	t.Cleanup(func() { p.Down(context.Background()) })
	pair, err := p.Up(ctx, infra.Spec{Campaign: "sshtest", Dir: l.dir})
	if err != nil {
		t.Fatal(err)
	}
	// Trust on first use: both keys are now pinned, and they are the keys
	// the sshds really have.
	known, _ := os.ReadFile(filepath.Join(l.dir, "known_hosts"))
	for addr, k := range l.hostKeys {
		want := fmt.Sprintf("[%s]:%s %s", addr, sshPort, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k))))
		if !strings.Contains(string(known), want) {
			t.Errorf("known_hosts lacks %q:\n%s", want, known)
		}
	}

	client := pair.Client.(*Host)
	f, err := client.Facts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if f.Arch != runtime.GOARCH || f.NICWithAddr(client.DataAddr()) != "lr-cli" {
		t.Errorf("client facts %+v", f)
	}
	bin, err := client.Linerate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(bin, filepath.Join(l.dir, "remote-client")+"/linerate-") {
		t.Errorf("binary uploaded to %s", bin)
	}
	// Compressed on the wire, the same bytes on the host, nothing else left.
	localBin := filepath.Join(dist, "linerate-linux-"+runtime.GOARCH)
	want, _ := fileSHA256(localBin)
	got, _ := fileSHA256(bin)
	lst, _ := os.Stat(localBin)
	if got != want || client.uploadedBytes <= 0 || client.uploadedBytes > lst.Size()/2 {
		t.Errorf("uploaded %d bytes for a %d-byte binary; sha256 there %s, here %s", client.uploadedBytes, lst.Size(), got, want)
	}
	if ents, _ := os.ReadDir(filepath.Dir(bin)); len(ents) != 1 {
		t.Errorf("remote directory holds %d files, want the binary alone: %v", len(ents), ents)
	}
	var help, helpErr bytes.Buffer // --help goes to stdout, as go's and cobra's tools do
	err = client.Exec(ctx, infra.Command{Argv: []string{bin, "bench", "--help"}, Stdout: &help, Stderr: &helpErr, Timeout: 20 * time.Second})
	if err != nil || !strings.Contains(help.String(), "Usage: linerate bench") {
		st, _ := os.Stat(bin)
		t.Fatalf("remote bench --help: %v\n%s (binary %s: %v)", err, help.String(), bin, st)
	}
	// A second host object finds the same build there and does not upload.
	again, _ := New(l.config(l.pair.Client, filepath.Join(l.dir, "known_hosts")))
	defer again.Close()
	if bin2, err := again.Linerate(ctx); err != nil || bin2 != bin || again.uploads != 0 || client.uploads != 1 {
		t.Errorf("second lookup %s %v, uploads %d/%d", bin2, err, client.uploads, again.uploads)
	}

	if _, err := exec.LookPath("redis-server"); err != nil {
		need(t, false, "redis-server missing (Debian redis-server)")
	}
	srv := netns.Of(l.pair.Server)
	redis := srv.Command(ctx, "redis-server", "--bind", srv.DataAddr().String(), "--port", "6390",
		"--save", "", "--appendonly", "no", "--protected-mode", "no")
	if err := redis.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { redis.Process.Kill(); redis.Wait() })
	for i := 0; ; i++ {
		if _, err := pair.Server.Run(ctx, "redis-cli", "-h", srv.DataAddr().String(), "-p", "6390", "ping"); err == nil {
			break
		} else if i == 50 {
			t.Fatalf("redis-server did not answer: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var out bytes.Buffer
	progress := &infra.TailBuffer{Max: 4096}
	// -d 3s: make test was seen to freeze a process for 1-2.5 s, and the record must hold ops.
	err = client.Exec(ctx, infra.Command{
		Argv: []string{bin, "bench", "-h", pair.Server.DataAddr().String(), "-p", "6390",
			"-s", "256KiB", "-c", "2", "-t", "1", "-n", "8", "-r", "1:1", "--warmup", "0s", "-d", "3s", "--json", "-"},
		Stdout: &out, Stderr: progress, Timeout: 60 * time.Second,
	})
	if err != nil {
		t.Fatalf("remote bench: %v\n%s", err, progress)
	}
	var rec struct {
		Workload map[string]any `json:"workload"`
		Ops      map[string]struct {
			Ops uint64 `json:"ops"`
		} `json:"ops"`
		Linerate struct {
			Arch string `json:"arch"`
		} `json:"linerate"`
	}
	if err := json.Unmarshal(out.Bytes(), &rec); err != nil {
		t.Fatalf("bench JSON: %v\n%s", err, out.String())
	}
	var ops uint64
	for _, o := range rec.Ops {
		ops += o.Ops
	}
	if ops == 0 || rec.Linerate.Arch != runtime.GOARCH {
		t.Errorf("bench record: %d ops, arch %q:\n%.2000s", ops, rec.Linerate.Arch, out.String())
	}
	// The remote file arrives back over SFTP too.
	local := filepath.Join(t.TempDir(), "bin")
	if err := client.Get(ctx, bin, local); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(local); err != nil || st.Size() < 1<<20 {
		t.Errorf("fetched binary: %v %v", st, err)
	}
}

func TestHostKeyPinning(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	srv := l.pair.Server
	cases := []struct {
		name    string
		known   func(file string) // prepares the file
		wantErr bool
	}{
		{"first use pins", func(string) {}, false},
		{"pinned key matches", func(f string) {
			line := fmt.Sprintf("[%s]:%s %s", srv.DataAddr(), sshPort, ssh.MarshalAuthorizedKey(l.hostKeys[srv.DataAddr().String()]))
			os.WriteFile(f, []byte(line), 0o600)
		}, false},
		{"other key pinned is refused", func(f string) {
			_, other, _ := ed25519.GenerateKey(rand.Reader)
			s, _ := ssh.NewSignerFromKey(other)
			line := fmt.Sprintf("[%s]:%s %s", srv.DataAddr(), sshPort, ssh.MarshalAuthorizedKey(s.PublicKey()))
			os.WriteFile(f, []byte(line), 0o600)
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "known_hosts")
			tc.known(file)
			before, _ := os.ReadFile(file)
			h, err := New(l.config(srv, file))
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			out, err := h.Run(ctx, "echo", "ran")
			if tc.wantErr {
				var mm *HostKeyMismatchError
				if !errors.As(err, &mm) || !strings.Contains(err.Error(), "does not match the pinned key") {
					t.Fatalf("want a refusal naming the mismatch, got %v", err)
				}
				if string(out) == "ran\n" {
					t.Error("command ran on a host with the wrong key")
				}
				if after, _ := os.ReadFile(file); !bytes.Equal(before, after) {
					t.Error("known_hosts changed after a mismatch")
				}
				if h.Dials() != 1 {
					t.Errorf("a refused host was dialled %d times; a mismatch is not retried", h.Dials())
				}
				return
			}
			if err != nil || string(out) != "ran\n" {
				t.Fatalf("run: %q %v", out, err)
			}
			after, _ := os.ReadFile(file)
			if n := strings.Count(string(after), "\n"); n != 1 {
				t.Errorf("known_hosts has %d lines:\n%s", n, after)
			}
		})
	}
}

// killingDialer closes every connection it made after a delay, counting
// dials: the real sshd sees a dropped TCP connection.
type killingDialer struct {
	l     *lab
	after time.Duration
	mu    sync.Mutex
	dials int
	kill  int // how many of the next connections to kill
}

func (d *killingDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := d.l.dialFromNS(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.dials++
	kill := d.kill > 0
	if kill {
		d.kill--
	}
	d.mu.Unlock()
	if kill {
		time.AfterFunc(d.after, func() { c.Close() })
	}
	return c, nil
}

func TestDroppedConnection(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	cases := []struct {
		name      string
		kills     int
		wantErr   bool
		wantDials int
	}{
		{"one drop is retried", 1, false, 2},
		{"a second drop fails", 2, true, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := &killingDialer{l: l, after: 700 * time.Millisecond, kill: tc.kills}
			cfg := l.config(l.pair.Server, filepath.Join(t.TempDir(), "known_hosts"))
			cfg.Dial = d.dial
			h, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			var out bytes.Buffer
			err = h.Exec(ctx, infra.Command{Argv: []string{"sh", "-c", "sleep 1.5; echo done"}, Stdout: &out, Timeout: 20 * time.Second})
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "connection failed twice") {
					t.Fatalf("want failure after one retry, got %v", err)
				}
			} else if err != nil || out.String() != "done\n" {
				t.Fatalf("want success after a retry, got %q %v", out.String(), err)
			}
			if d.dials != tc.wantDials {
				t.Errorf("dialled %d times, want %d", d.dials, tc.wantDials)
			}
		})
	}
}

func TestTimeoutKillsRemoteCommand(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	h, err := New(l.config(l.pair.Server, filepath.Join(t.TempDir(), "known_hosts")))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	// A timeout, not the command's end: sleep ending by itself is no error.
	err = h.Exec(ctx, infra.Command{Argv: []string{"sleep", "31.25"}, Timeout: 500 * time.Millisecond})
	if !errors.Is(err, infra.ErrTimeout) {
		t.Fatalf("want a timeout, got %v", err)
	}
	// The remote process is gone.
	for i := 0; ; i++ {
		out, _ := exec.Command("pgrep", "-f", "sleep 31.25").Output()
		if len(bytes.TrimSpace(out)) == 0 {
			break
		}
		if i == 30 {
			t.Fatalf("remote sleep still running: pids %s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Exit codes and standard error come back.
	_, err = h.Run(ctx, "sh", "-c", "echo 'it broke' >&2; exit 4")
	var ee *infra.ExitError
	if !errors.As(err, &ee) || ee.Code != 4 || ee.Tail != "it broke" {
		t.Errorf("exit 4: %#v", err)
	}
	// Arguments survive the remote shell verbatim.
	args := []string{"a b", "it's", "$HOME", "*", ""}
	out, err := h.Run(ctx, append([]string{"printf", "[%s]"}, args...)...)
	if want := "[a b][it's][$HOME][*][]"; err != nil || string(out) != want {
		t.Errorf("quoting: %q %v, want %q", out, err, want)
	}
}

// The settings make both hosts' configs, and what is wrong names its
// field (the campaign turns the field into a line; the unknown key and
// the wrong type are the campaign decoder's, tested in sweeps/session).
func TestSettings(t *testing.T) {
	cases := []struct {
		name      string
		settings  Settings
		wantField string // "" for none
		wantErr   string
		check     func(*Provider) bool
	}{
		{"strings", Settings{Server: Target{Address: "ec2-user@10.0.0.1"}, Client: Target{Address: "ec2-user@10.0.0.2:2200"}, Key: "/k"},
			"", "", func(p *Provider) bool {
				return p.Server.Addr == "10.0.0.1" && p.Client.Addr == "10.0.0.2:2200" && p.Client.User == "ec2-user" && p.Server.KeyFile == "/k" && p.Server.Label == "server"
			}},
		{"mapping", Settings{Server: Target{Address: "h1", User: "u", Key: "/k", DataAddress: "172.31.0.1"}, Client: Target{Address: "u@h2"}, Key: "/k2"},
			"", "", func(p *Provider) bool {
				return p.Server.DataAddr.String() == "172.31.0.1" && p.Server.KeyFile == "/k" && p.Client.KeyFile == "/k2" && p.Server.User == "u"
			}},
		{"a user beside the address wins", Settings{Server: Target{Address: "a@h1", User: "b"}, Client: Target{Address: "u@h2"}, Key: "/k"},
			"", "", func(p *Provider) bool { return p.Server.User == "b" }},
		{"no user", Settings{Server: Target{Address: "10.0.0.1"}, Client: Target{Address: "u@h"}, Key: "/k"}, "server", "ssh host 10.0.0.1 user: empty", nil},
		{"no key", Settings{Server: Target{Address: "u@h"}, Client: Target{Address: "u@h"}}, "server", "key: no key file given", nil},
		{"no client", Settings{Server: Target{Address: "u@h"}, Key: "/k"}, "client", "missing", nil},
		{"mapping without address", Settings{Server: Target{User: "u"}, Client: Target{Address: "u@h"}, Key: "/k"}, "server.address", "missing", nil},
		{"bad data address", Settings{Server: Target{Address: "h", User: "u", DataAddress: "x"}, Client: Target{Address: "u@h"}, Key: "/k"}, "server.data-address", `"x" is not an IP address`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.settings.Provider()
			if verr := tc.settings.Validate(); (verr == nil) != (err == nil) {
				t.Errorf("Validate %v, Provider %v", verr, err)
			}
			if tc.wantErr != "" {
				fields, _ := infra.FieldErrors(err)
				if len(fields) == 0 || fields[0].Field != tc.wantField || !strings.Contains(fields[0].Msg, tc.wantErr) {
					t.Fatalf("want %s: …%s…, got %v", tc.wantField, tc.wantErr, err)
				}
				return
			}
			if err != nil || !tc.check(p) {
				t.Fatalf("%+v %v", p, err)
			}
		})
	}
	// Check reads the key files Validate leaves alone.
	s := Settings{Server: Target{Address: "u@h1"}, Client: Target{Address: "u@h2"}, Key: filepath.Join(t.TempDir(), "none")}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(); err == nil || !strings.Contains(err.Error(), "server: ") {
		t.Errorf("a missing key file: %v", err)
	}
}

func TestPutGetRoundTrip(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	h, err := New(l.config(l.pair.Server, filepath.Join(t.TempDir(), "known_hosts")))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	dir := t.TempDir()
	payload := bytes.Repeat([]byte("0123456789abcdef"), 300_000) // several SFTP packets
	src := filepath.Join(dir, "src")
	os.WriteFile(src, payload, 0o600)
	remote := filepath.Join(dir, "remote")
	if err := h.Put(ctx, src, remote, 0o751); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(remote) // the "remote" host shares this file system
	if err != nil || st.Mode().Perm() != 0o751 || st.Size() != int64(len(payload)) {
		t.Fatalf("put: %v %v", st, err)
	}
	back := filepath.Join(dir, "back")
	if err := h.Get(ctx, remote, back); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(back); !bytes.Equal(got, payload) {
		t.Fatalf("round trip changed the file: %d bytes back of %d", len(got), len(payload))
	}
	if err := h.Put(ctx, filepath.Join(dir, "missing"), remote, 0o644); err == nil {
		t.Error("put of a missing file succeeded")
	}
}

// frozenConn stands for a peer that vanished without closing (a host
// gone, a half-open connection): once frozen, writes vanish and reads
// never return, as on a connection nobody answers.
type frozenConn struct {
	net.Conn
	frozen    chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
}

func (c *frozenConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	select {
	case <-c.frozen:
		<-c.closed // the bytes never arrive; only closing ends the wait
		return 0, net.ErrClosed
	default:
	}
	return n, err
}

func (c *frozenConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

func (c *frozenConn) Write(b []byte) (int, error) {
	select {
	case <-c.frozen:
		return len(b), nil
	default:
		return c.Conn.Write(b)
	}
}

// A peer that stops answering is noticed by the keepalive: a command
// running on the connection fails within a few intervals instead of
// waiting for ever (here a 60 s command without a timeout), and is not
// run again when marked Once.
func TestSilentPeerIsNoticed(t *testing.T) {
	l := newLab(t)
	old := KeepaliveEvery
	KeepaliveEvery = 300 * time.Millisecond
	defer func() { KeepaliveEvery = old }()
	frozen := make(chan struct{})
	cfg := l.config(l.pair.Server, filepath.Join(t.TempDir(), "known_hosts"))
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := l.dialFromNS(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &frozenConn{Conn: c, frozen: frozen, closed: make(chan struct{})}, nil
	}
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	time.AfterFunc(time.Second, func() { close(frozen) })
	start := time.Now()
	// Unnoticed, Exec would wait for ever: the frozen connection delivers
	// nothing more (the package's test timeout would end it).
	err = h.Exec(context.Background(), infra.Command{Argv: []string{"sleep", "60"}, Once: true})
	if err == nil || !strings.Contains(err.Error(), "not run again") {
		t.Errorf("want a lost-connection error, got %v", err)
	}
	t.Logf("noticed after %v: %v", time.Since(start).Round(time.Millisecond), err)
}
