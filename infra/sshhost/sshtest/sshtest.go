// Package sshtest runs real sshd servers for tests: one in each namespace
// of a netns pair, with a client key both accept. Tests of the ssh provider
// and of campaigns on ssh and aws hosts use it; nothing here reaches beyond
// namespaces the test created.
package sshtest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/netns"
)

// Port is where each sshd listens, on its namespace's data address.
const Port = "2222"

// Need fails in CI and skips elsewhere when the test cannot run here: in
// CI a missing dependency is a failure, never a skip.
func Need(t testing.TB, ok bool, why string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s (CI must have it: run .ci/setup as root)", why)
	}
	t.Skipf("%s; CI runs this", why)
}

// Lab is a netns pair with a real sshd in each namespace. Connections
// start in the client namespace (Dial), which reaches the server's and its
// own address; those to a further client host (NewClients) start in the
// server namespace, the one that has a link to every client.
type Lab struct {
	Pair      infra.Pair
	Dir       string
	ClientKey ssh.Signer
	KeyFile   string                   // ClientKey's private half, for a campaign's provider.key
	HostKeys  map[string]ssh.PublicKey // by data address
	// BinDir is one directory all hosts of the lab can upload linerate
	// into (sshhost.Config.RemoteDir): they share this machine's files,
	// so the first host's upload (gzip of a 100 MB unstripped build, 3
	// CPU-seconds) is found in place, checksum and all, by the others.
	BinDir string
	Dial   func(ctx context.Context, network, addr string) (net.Conn, error)
}

// New brings up the pair (named after campaign) and both sshds; cleanup
// takes them down.
func New(t testing.TB, campaign string) *Lab {
	t.Helper()
	return NewClients(t, campaign, 1)
}

// NewClients is New with n client hosts (Pair.ClientHosts), each with its
// sshd.
func NewClients(t testing.TB, campaign string, n int) *Lab {
	t.Helper()
	Need(t, os.Geteuid() == 0, "network namespaces need root")
	_, err := os.Stat("/usr/sbin/sshd")
	Need(t, err == nil, "/usr/sbin/sshd missing (Debian openssh-server)")
	p := &netns.Provider{}
	t.Cleanup(func() {
		if err := p.Down(context.Background()); err != nil {
			t.Errorf("netns down: %v", err)
		}
	})
	pair, err := p.Up(context.Background(), infra.Spec{Campaign: campaign, Clients: n})
	if err != nil {
		t.Fatal(err)
	}
	l := &Lab{Pair: pair, Dir: t.TempDir(), HostKeys: map[string]ssh.PublicKey{}}
	l.BinDir = filepath.Join(l.Dir, "bin")
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	l.ClientKey, _ = ssh.NewSignerFromKey(priv)
	blk, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	l.KeyFile = filepath.Join(l.Dir, "client_ed25519")
	if err := os.WriteFile(l.KeyFile, pem.EncodeToMemory(blk), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(l.Dir, "authorized_keys"), ssh.MarshalAuthorizedKey(l.ClientKey.PublicKey()), 0o600); err != nil {
		t.Fatal(err)
	}
	// sshd refuses to start without its privilege separation directory.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatal(err)
	}
	l.Dial = pair.Client.(infra.Entered).DialContext
	if hosts := pair.ClientHosts(); len(hosts) > 1 {
		cli, srv := pair.Client.(infra.Entered).DialContext, pair.Server.(infra.Entered).DialContext
		further := map[string]bool{}
		for _, h := range hosts[1:] {
			further[h.DataAddr().String()] = true
		}
		l.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if host, _, err := net.SplitHostPort(addr); err == nil && further[host] {
				return srv(ctx, network, addr)
			}
			return cli(ctx, network, addr)
		}
	}
	all := append([]infra.Host{pair.Server}, pair.ClientHosts()...)
	for _, h := range all {
		Shape(t, netns.Of(h).Namespace)
	}
	for _, h := range all {
		l.startSSHD(t, h.(infra.Entered))
	}
	return l
}

// Rate is what each veth of a shaped lab sends at most: above a paced
// cell's (50 requests of 1 MiB a second, 0.42 Gbps), and low enough that
// a closed-loop window (a link calibration) moves real bytes with little
// CPU, where an unshaped veth takes both CPUs of a small machine from
// every other test. What a window moves is the machine's to say: no test
// judges it.
const Rate = "2gbit"

// Shape puts a token bucket (tc tbf, at Rate) on every veth in the
// network namespaces named; the namespaces' removal takes it away. Its
// burst is far above a GSO segment (64 KiB), which tbf could never send
// whole.
func Shape(t testing.TB, namespaces ...string) {
	t.Helper()
	for _, ns := range namespaces {
		out, err := exec.Command("ip", "-n", ns, "-o", "link", "show", "type", "veth").Output()
		if err != nil {
			t.Fatalf("%s: ip link: %v", ns, err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			// "7: lr-srv@if6: <BROADCAST,...": the name before the "@".
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			dev, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			cmd := exec.Command("tc", "-n", ns, "qdisc", "replace", "dev", dev, "root", "tbf", "rate", Rate, "burst", "1mb", "latency", "50ms")
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %s: %v: %s", ns, cmd, err, b)
			}
		}
	}
}

// Addr is host:port of the sshd of h.
func (l *Lab) Addr(h infra.Host) string { return net.JoinHostPort(h.DataAddr().String(), Port) }

// AuthorizeKey lets key log in too (a key pair a provider created).
func (l *Lab) AuthorizeKey(t testing.TB, key ssh.PublicKey) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(l.Dir, "authorized_keys"), os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(ssh.MarshalAuthorizedKey(key)); err != nil {
		t.Fatal(err)
	}
}

func (l *Lab) startSSHD(t testing.TB, h infra.Entered) {
	t.Helper()
	dir := filepath.Join(l.Dir, h.Name())
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	blk, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	keyPath := filepath.Join(dir, "host_ed25519")
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(blk), 0o600); err != nil {
		t.Fatal(err)
	}
	signer, _ := ssh.NewSignerFromKey(priv)
	l.HostKeys[h.DataAddr().String()] = signer.PublicKey()
	cfg := fmt.Sprintf(`Port %s
ListenAddress %s
HostKey %s
PidFile %s
AuthorizedKeysFile %s
StrictModes no
UsePAM no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
Subsystem sftp internal-sftp
LogLevel ERROR
`, Port, h.DataAddr(), keyPath, filepath.Join(dir, "sshd.pid"), filepath.Join(l.Dir, "authorized_keys"))
	cfgPath := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	// The sshd gets its own mount namespace with an empty directory over
	// the login directory, so no shell startup file of this machine (a
	// slow ~/.bashrc) runs with each command; the machine is untouched.
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	emptyHome := filepath.Join(dir, "home")
	if err := os.MkdirAll(emptyHome, 0o700); err != nil {
		t.Fatal(err)
	}
	argv := append(h.Enter(), "unshare", "--mount", "--propagation", "private", "sh", "-c",
		`mount --bind "$1" "$2" && exec /usr/sbin/sshd -D -e -f "$3"`, "sshd", emptyHome, home, cfgPath)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := l.Addr(h)
	for i := 0; ; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := l.Dial(ctx, "tcp", addr)
		cancel()
		if err == nil {
			c.Close()
			return
		}
		if i == 50 {
			t.Fatalf("sshd on %s did not listen: %v; log: %s", addr, err, log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
