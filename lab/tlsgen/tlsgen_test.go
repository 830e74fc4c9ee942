package tlsgen_test

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/lab/tlsgen"
)

func generate(t *testing.T, opt tlsgen.Options) *tlsgen.Bundle {
	t.Helper()
	b, err := tlsgen.Generate(opt)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// exchange runs a Go TLS server with srv on addr for one connection and a
// client with cli that sends a line and reads the echo. It returns the
// client's error (handshake or exchange) and the server's.
func exchange(t *testing.T, network, addr string, srv, cli *tls.Config) (clientErr, serverErr error) {
	t.Helper()
	l, err := tls.Listen(network, addr, srv)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		if err == nil {
			_, err = io.WriteString(c, line)
		}
		done <- err
	}()
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, network, l.Addr().String(), cli)
	if err == nil {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		// TLS 1.3 finishes the client's handshake before the server has
		// checked the client's certificate: the refusal arrives on read.
		if _, err = io.WriteString(c, "ping\n"); err == nil {
			var got string
			if got, err = bufio.NewReader(c).ReadString('\n'); err == nil && got != "ping\n" {
				err = errors.New("echo " + got)
			}
		}
		c.Close()
	} else {
		l.Close() // the server may still wait in Accept
	}
	return err, <-done
}

func TestHandshake(t *testing.T) {
	plain := generate(t, tlsgen.Options{})
	other := generate(t, tlsgen.Options{Name: "another run"})
	sameName := generate(t, tlsgen.Options{}) // another run's CA, named as plain's
	mutual := generate(t, tlsgen.Options{Client: true, DNSNames: []string{"server.lab"}, IPs: []net.IP{net.ParseIP("127.0.0.1")}})
	noClientCert := *mutual
	noClientCert.ClientCert, noClientCert.ClientKey = nil, nil

	cases := []struct {
		name          string
		network, addr string
		server        *tlsgen.Bundle
		client        *tlsgen.Bundle // whose CA (and client certificate) the client uses
		serverName    string
		later         time.Duration // the client's clock ahead by this
		want          func(error) bool
		says          string
		notSays       string // e.g. a misleading cause next to the real one
	}{
		{name: "by name", network: "tcp4", addr: "127.0.0.1:0", server: plain, client: plain, serverName: "localhost"},
		{name: "by IPv4", network: "tcp4", addr: "127.0.0.1:0", server: plain, client: plain, serverName: "127.0.0.1"},
		{name: "by IPv6", network: "tcp6", addr: "[::1]:0", server: plain, client: plain, serverName: "::1"},
		{name: "mutual", network: "tcp4", addr: "127.0.0.1:0", server: mutual, client: mutual, serverName: "server.lab"},
		{name: "another CA", network: "tcp4", addr: "127.0.0.1:0", server: plain, client: other, serverName: "localhost",
			want: func(err error) bool { var e x509.UnknownAuthorityError; return errors.As(err, &e) }, says: "certificate signed by unknown authority"},
		{name: "another CA of the same name", network: "tcp4", addr: "127.0.0.1:0", server: plain, client: sameName, serverName: "localhost",
			want: func(err error) bool { var e x509.UnknownAuthorityError; return errors.As(err, &e) }, says: "certificate signed by unknown authority", notSays: "possibly because"},
		{name: "wrong name", network: "tcp4", addr: "127.0.0.1:0", server: mutual, client: mutual, serverName: "localhost",
			want: func(err error) bool { var e x509.HostnameError; return errors.As(err, &e) }, says: "not localhost"},
		{name: "expired", network: "tcp4", addr: "127.0.0.1:0", server: plain, client: plain, serverName: "localhost", later: tlsgen.DefaultValidity + time.Minute,
			want: func(err error) bool {
				var e x509.CertificateInvalidError
				return errors.As(err, &e) && e.Reason == x509.Expired
			}, says: "expired"},
		{name: "mutual without client certificate", network: "tcp4", addr: "127.0.0.1:0", server: mutual, client: &noClientCert, serverName: "server.lab",
			want: func(err error) bool { return err != nil }, says: "certificate required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, err := c.server.ServerConfig()
			if err != nil {
				t.Fatal(err)
			}
			cli, err := c.client.ClientConfig(c.serverName)
			if err != nil {
				t.Fatal(err)
			}
			if c.later != 0 {
				cli.Time = func() time.Time { return time.Now().Add(c.later) }
			}
			clientErr, serverErr := exchange(t, c.network, c.addr, srv, cli)
			if c.want == nil {
				if clientErr != nil || serverErr != nil {
					t.Fatalf("client: %v; server: %v", clientErr, serverErr)
				}
				return
			}
			if !c.want(clientErr) || !strings.Contains(clientErr.Error(), c.says) || c.notSays != "" && strings.Contains(clientErr.Error(), c.notSays) {
				t.Fatalf("client error %v (%T), want one saying %q (and not %q)", clientErr, clientErr, c.says, c.notSays)
			}
			if serverErr == nil {
				t.Errorf("the server saw no failure")
			}
		})
	}
}

func TestCertificates(t *testing.T) {
	b := generate(t, tlsgen.Options{Name: "run-42", Client: true, Validity: 3 * time.Hour})
	parse := func(p []byte) *x509.Certificate {
		blk, _ := pem.Decode(p)
		if blk == nil || blk.Type != "CERTIFICATE" {
			t.Fatalf("not a PEM certificate: %q", p)
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ca, server, client := parse(b.CACert), parse(b.ServerCert), parse(b.ClientCert)
	if !ca.IsCA || !ca.MaxPathLenZero || !strings.HasPrefix(ca.Subject.CommonName, "run-42 throwaway CA ") {
		t.Errorf("CA: IsCA %v MaxPathLenZero %v CN %q", ca.IsCA, ca.MaxPathLenZero, ca.Subject.CommonName)
	}
	for name, c := range map[string]*x509.Certificate{"CA": ca, "server": server, "client": client} {
		pub, ok := c.PublicKey.(*ecdsa.PublicKey)
		if !ok || pub.Curve != elliptic.P256() {
			t.Errorf("%s key: %T, want ECDSA P-256", name, c.PublicKey)
		}
		if life := c.NotAfter.Sub(c.NotBefore); life < 4*time.Hour-2*time.Second || life > 4*time.Hour+2*time.Second {
			t.Errorf("%s valid for %s, want 3 h ahead and 1 h back", name, life)
		}
		if !c.NotAfter.Equal(b.NotAfter) {
			t.Errorf("%s NotAfter %s, bundle says %s", name, c.NotAfter, b.NotAfter)
		}
	}
	if server.SerialNumber.Cmp(client.SerialNumber) == 0 {
		t.Errorf("server and client share serial %s", server.SerialNumber)
	}
	if got := strings.Join(server.DNSNames, ","); got != "localhost" || len(server.IPAddresses) != 2 {
		t.Errorf("server names %q, IPs %v; want localhost, 127.0.0.1, ::1", got, server.IPAddresses)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	if _, err := server.Verify(x509.VerifyOptions{Roots: roots, DNSName: "localhost"}); err != nil {
		t.Errorf("server certificate does not verify for a server: %v", err)
	}
	// valkey presents its server certificate when it connects out.
	for name, c := range map[string]*x509.Certificate{"server": server, "client": client} {
		if _, err := c.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("%s certificate does not verify as a client: %v", name, err)
		}
	}
	if _, err := client.Verify(x509.VerifyOptions{Roots: roots}); err == nil {
		t.Errorf("the client certificate verifies as a server's")
	}
	for _, v := range []time.Duration{-time.Second, tlsgen.MaxValidity + time.Second} {
		if _, err := tlsgen.Generate(tlsgen.Options{Validity: v}); err == nil || !strings.Contains(err.Error(), "validity") {
			t.Errorf("validity %s: %v, want a refusal naming the validity", v, err)
		}
	}
}

func TestWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	b := generate(t, tlsgen.Options{Client: true})
	// A key left readable by an earlier run is replaced, mode and all.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "server.key"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := b.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	for path, mode := range map[string]os.FileMode{f.CA: 0o644, f.ServerCert: 0o644, f.ServerKey: 0o600, f.ClientCert: 0o644, f.ClientKey: 0o600} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, want %v", path, st.Mode().Perm(), mode)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 5 {
		t.Errorf("%d files in %s, want 5 (no temporary files left)", len(ents), dir)
	}
	for _, pair := range [][2]string{{f.ServerCert, f.ServerKey}, {f.ClientCert, f.ClientKey}} {
		if _, err := tls.LoadX509KeyPair(pair[0], pair[1]); err != nil {
			t.Errorf("load %s: %v", pair[0], err)
		}
	}
	want := []string{"--port", "0", "--tls-port", "6390", "--tls-cert-file", f.ServerCert, "--tls-key-file", f.ServerKey,
		"--tls-ca-cert-file", f.CA, "--tls-auth-clients", "yes"}
	if got := f.ServerArgs(6390, true); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("ServerArgs = %q, want %q", got, want)
	}
	if _, err := b.Write(filepath.Join(f.CA, "sub")); err == nil {
		t.Errorf("writing under a file succeeded")
	}
}
