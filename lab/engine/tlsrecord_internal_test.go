package engine

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/lab/internal/rawsock"
	"github.com/linerate/linerate/lab/tlsgen"
)

// The session's own records speak TLS 1.3 with Go's crypto/tls server,
// which sends its session tickets right after the handshake: bytes that
// span many records go out and come back intact, in both AES-GCM suites
// (the server follows the client's order, which the test sets). A TLS 1.2
// session stays on crypto/tls.
func TestRecordLayerEchoesThroughCryptoTLS(t *testing.T) {
	b, err := tlsgen.Generate(tlsgen.Options{IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		max     uint16
		wantRec bool
	}{
		{"TLS 1.3", tls.VersionTLS13, true},
		{"TLS 1.2", tls.VersionTLS12, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := startEcho(t, b, tc.max)
			cfg, err := b.ClientConfig("127.0.0.1")
			if err != nil {
				t.Fatal(err)
			}
			fd, err := dialRaw(addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			s, err := handshakeTLS(fd, cfg, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if (s.rec != nil) != tc.wantRec {
				t.Fatalf("own records %v, want %v (suite %x)", s.rec != nil, tc.wantRec, s.conn.ConnectionState().CipherSuite)
			}
			if s.rec != nil {
				echoThroughRecords(t, s)
			}
		})
	}
}

// echoThroughRecords sends 300 KiB (more than one sealed chunk) and reads
// it back.
func echoThroughRecords(t *testing.T, s *tlsStream) {
	t.Helper()
	want := make([]byte, 300<<10)
	for i := range want {
		want[i] = byte(i * 31 >> 3)
	}
	s.fc.deadline = time.Now().Add(10 * time.Second)
	got := make([]byte, 0, len(want))
	buf := make([]byte, 50<<10)
	iov := make([]unix.Iovec, 1)
	for sent := 0; len(got) < len(want); {
		if sent < len(want) && s.rec.flush() == nil {
			rawsock.SetIov(&iov[0], want[sent:])
			sent += s.rec.seal(iov)
			_ = s.rec.flush()
		}
		n, err := s.rec.Read(buf)
		if rawsock.IsAgain(err) {
			if err := s.fc.wait(unix.POLLIN); err != nil {
				t.Fatalf("after %d of %d bytes: %v", len(got), len(want), err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("after %d of %d bytes: %v", len(got), len(want), err)
		}
		got = append(got, buf[:n]...)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the bytes came back changed")
	}
}

// startEcho serves one TLS connection that echoes what it reads.
func startEcho(t *testing.T, b *tlsgen.Bundle, max uint16) string {
	t.Helper()
	cfg, err := b.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxVersion = max
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c)
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}
