package servers_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/infra/internal/mirrortest"
	"github.com/linerate/linerate/infra/servers"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/lab/tlsgen"
)

// startTLS starts bin serving TLS only (Files.ServerArgs) on a free
// loopback port and stops it when the test ends.
func startTLS(t *testing.T, bin string, f tlsgen.Files, authClients bool) string {
	t.Helper()
	dir := t.TempDir()
	port := labtest.FreePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	log := filepath.Join(dir, "server.log")
	args := append(f.ServerArgs(port, authClients), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--logfile", log, "--protected-mode", "no")
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case <-done:
			b, _ := os.ReadFile(log)
			t.Fatalf("%s %s exited: %v\n%s", bin, strings.Join(args, " "), cmd.ProcessState, b)
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return addr
		}
	}
	t.Fatalf("%s did not listen on %s", bin, addr)
	return ""
}

// command sends one RESP command over TLS and returns the first line of
// the reply, or for a bulk reply its body.
func command(addr string, cfg *tls.Config, args ...string) (string, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	req := "*" + strconv.Itoa(len(args)) + "\r\n"
	for _, a := range args {
		req += "$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n"
	}
	if _, err := io.WriteString(c, req); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if !strings.HasPrefix(line, "$") {
		return line, nil
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil || n < 0 || n > 1<<20 {
		return "", fmt.Errorf("bulk length %q", line)
	}
	body := make([]byte, n+2)
	_, err = io.ReadFull(r, body)
	return string(body[:n]), err
}

// serverVersion reads valkey_version from INFO server, or redis_version
// from a redis (valkey also reports a redis_version, for old clients).
func serverVersion(info string) string {
	fields := map[string]string{}
	for _, l := range strings.Split(info, "\r\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			fields[k] = v
		}
	}
	if v := fields["valkey_version"]; v != "" {
		return v
	}
	return fields["redis_version"]
}

// checkServer is the check of one server build with this
// package's certificates: PING answers +PONG over TLS; a client trusting
// another CA is refused with the x509 error; with tls-auth-clients yes a
// client without a certificate is refused and one with it answered.
func checkServer(t *testing.T, bin, wantVersion string) {
	dir := t.TempDir()
	b, err := tlsgen.Generate(tlsgen.Options{Client: true, IPs: []net.IP{net.ParseIP("127.0.0.1")}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := b.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	withCert, err := b.ClientConfig("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	noCert := withCert.Clone()
	noCert.Certificates = nil

	addr := startTLS(t, bin, f, false)
	if got, err := command(addr, noCert, "PING"); err != nil || got != "+PONG" {
		t.Fatalf("PING over TLS: %q, %v", got, err)
	}
	info, err := command(addr, noCert, "INFO", "server")
	if err != nil {
		t.Fatal(err)
	}
	v := serverVersion(info)
	if !strings.HasPrefix(v, wantVersion) {
		t.Errorf("INFO server says version %q, want %s", v, wantVersion)
	}
	t.Logf("%s: version %s answers PING over TLS", bin, v)
	other, err := tlsgen.Generate(tlsgen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	otherCA, err := other.ClientConfig("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	var unknown x509.UnknownAuthorityError
	if _, err := command(addr, otherCA, "PING"); !errors.As(err, &unknown) {
		t.Errorf("a client trusting another CA: %v, want x509.UnknownAuthorityError", err)
	} else {
		t.Logf("a client trusting another CA: %v", err)
	}

	addr = startTLS(t, bin, f, true)
	if got, err := command(addr, noCert, "PING"); err == nil {
		t.Errorf("tls-auth-clients yes answered %q to a client without a certificate", got)
	}
	if got, err := command(addr, withCert, "PING"); err != nil || got != "+PONG" {
		t.Errorf("tls-auth-clients yes, client certificate: %q, %v", got, err)
	}
}

// Debian's own redis-server (bookworm's 7.0, installed by .ci/setup) is
// built with TLS.
func TestDebianRedisSpeaksTLS(t *testing.T) {
	checkServer(t, labtest.Need(t, "redis-server"), "7.")
}

// The store's versions (valkey 9.1, 8.1, 8.0 and redis 8.0 as Debian builds
// them) link libssl and take the TLS flags as they are: no module to load.
// They are checked in the user's own store, the one make demo and the
// other packages' tests install into (its lock makes installs take
// turns): what is checked is what runs, and a version already there is
// not unpacked again (4 versions into a fresh store took ~25 s of make
// test). TestInstallStartKill installs into a fresh store.
func TestStoreServersSpeakTLS(t *testing.T) {
	mirrortest.Require(t)
	st, err := servers.Open("")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	for _, s := range []string{"valkey@9.1", "valkey@8.1", "valkey@8.0", "redis@8.0"} {
		t.Run(s, func(t *testing.T) {
			sel, err := servers.ParseSelector(s)
			if err != nil {
				t.Fatal(err)
			}
			inst, err := st.Install(ctx, sel, servers.InstallOptions{})
			if err != nil {
				t.Fatalf("install %s: %v", s, err)
			}
			checkServer(t, inst.Server, sel.Version+".")
		})
	}
}
