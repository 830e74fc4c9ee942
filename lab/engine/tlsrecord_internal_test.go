package engine

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/lab/internal/rawsock"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/lab/tlsgen"
)

// The session's own records speak TLS 1.3 with Go's crypto/tls server:
// bytes that span many records go out and come back intact (the suite is
// the one Go picks, AES-128-GCM on AES hardware; both suites are judged
// against OpenSSL below). A TLS 1.2 session stays on crypto/tls.
func TestRecordLayerEchoesThroughCryptoTLS(t *testing.T) {
	b := testBundle(t)
	for _, tc := range []struct {
		name    string
		max     uint16
		wantRec bool
	}{
		{"TLS 1.3", tls.VersionTLS13, true},
		{"TLS 1.2", tls.VersionTLS12, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := handshakeTo(t, b, startEcho(t, b, tc.max))
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
	want := echoPayload()
	got, err := echo(s, want)
	if err != nil {
		t.Fatalf("after %d of %d bytes: %v", len(got), len(want), err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the bytes came back changed")
	}
}

func echoPayload() []byte {
	want := make([]byte, 300<<10)
	for i := range want {
		want[i] = byte(i * 31 >> 3)
	}
	return want
}

// echo sends want through the session's own records and reads what comes
// back until it is all there or a read fails: what arrived, and the error.
func echo(s *tlsStream, want []byte) ([]byte, error) { return exchange(s, want, len(want)) }

// exchange sends req through the session's own records and reads n bytes
// back, or until a read fails.
func exchange(s *tlsStream, req []byte, n int) ([]byte, error) {
	s.fc.deadline = time.Now().Add(10 * time.Second)
	got := make([]byte, 0, n)
	buf := make([]byte, 50<<10)
	iov := make([]unix.Iovec, 1)
	for sent := 0; len(got) < n; {
		if sent < len(req) && s.rec.flush() == nil {
			rawsock.SetIov(&iov[0], req[sent:])
			sent += s.rec.seal(iov)
		}
		// A request larger than the socket takes waits for room as well
		// as for an answer.
		pending := s.rec.flush() != nil || sent < len(req)
		n, err := s.rec.Read(buf)
		if rawsock.IsAgain(err) {
			events := int16(unix.POLLIN)
			if pending {
				events |= unix.POLLOUT
			}
			if err := s.fc.wait(events); err != nil {
				return got, err
			}
			continue
		}
		if err != nil {
			return got, err
		}
		got = append(got, buf[:n]...)
	}
	return got, nil
}

// Both TLS 1.3 AES-GCM suites against OpenSSL (Debian's redis-server),
// each forced on the server: the session runs on its own records, and a
// 1 MiB value SET through them comes back whole from a GET.
func TestRecordLayerBothAESSuitesAgainstOpenSSL(t *testing.T) {
	bin := labtest.Need(t, "redis-server")
	b := testBundle(t)
	files, err := b.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	value := bytes.Repeat(echoPayload(), 4)[:1<<20]
	set := append(fmt.Appendf(nil, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n", len(value)), value...)
	set = append(set, "\r\n"...)
	wantGet := append(fmt.Appendf(nil, "$%d\r\n", len(value)), value...)
	wantGet = append(wantGet, "\r\n"...)
	for _, suite := range []struct {
		name string
		id   uint16
	}{{"TLS_AES_128_GCM_SHA256", tls.TLS_AES_128_GCM_SHA256}, {"TLS_AES_256_GCM_SHA384", tls.TLS_AES_256_GCM_SHA384}} {
		t.Run(suite.name, func(t *testing.T) {
			srv := labtest.StartServerWith(t, bin, nil, func(port int) []string {
				return append(files.ServerArgs(port, false), "--tls-ciphersuites", suite.name)
			})
			s := handshakeTo(t, b, fmt.Sprintf("127.0.0.1:%d", srv.Port))
			if got := s.conn.ConnectionState().CipherSuite; s.rec == nil || got != suite.id {
				t.Fatalf("suite %x, own records %v: want %x on own records", got, s.rec != nil, suite.id)
			}
			if got, err := exchange(s, set, len("+OK\r\n")); err != nil || string(got) != "+OK\r\n" {
				t.Fatalf("SET: %q, %v", got, err)
			}
			if got, err := exchange(s, []byte("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"), len(wantGet)); err != nil || !bytes.Equal(got, wantGet) {
				t.Fatalf("GET: %d of %d bytes, same %v, %v", len(got), len(wantGet), bytes.Equal(got, wantGet[:len(got)]), err)
			}
		})
	}
}

// One byte flipped on the wire in a record the server sent after the
// handshake: the read fails (the record does not authenticate), and no
// changed byte is ever handed on as data.
func TestRecordLayerRefusesATamperedRecord(t *testing.T) {
	b := testBundle(t)
	var tamper atomic.Bool
	s := ownRecords(t, b, startTamperProxy(t, startEcho(t, b, tls.VersionTLS13), &tamper))
	tamper.Store(true)
	want := echoPayload()
	got, err := echo(s, want)
	if err == nil {
		t.Fatalf("all %d bytes read with one flipped on the wire", len(got))
	}
	if !bytes.Equal(got, want[:len(got)]) {
		t.Fatalf("a changed byte was handed on as data (%d bytes in, then %v)", len(got), err)
	}
	t.Logf("%d of %d bytes, then: %v", len(got), len(want), err)
}

// startTamperProxy forwards one connection to upstream; once tamper is
// set, it flips one bit in the middle of the next chunk the server sends.
func startTamperProxy(t *testing.T, upstream string, tamper *atomic.Bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var conns []net.Conn
	var mu sync.Mutex
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", upstream)
		if err != nil {
			c.Close()
			return
		}
		mu.Lock()
		conns = append(conns, c, u)
		mu.Unlock()
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = io.Copy(u, c); u.Close() }()
		buf := make([]byte, 64<<10)
		flipped := false
		for {
			n, err := u.Read(buf)
			if n > 0 && !flipped && tamper.Load() && n > 64 {
				buf[n/2] ^= 0x10
				flipped = true
			}
			if n > 0 {
				if _, werr := c.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		c.Close()
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
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

// Many tiny pieces in one seal (a record each, 22 bytes of header and tag
// beside 3 bytes: 15,000 of them pass the chunk's buffer, and one record's
// tag falls past its end): out grows rather than Seal writing past it, and
// the bytes come back in order.
func TestRecordLayerSealsManyTinyPieces(t *testing.T) {
	b := testBundle(t)
	s := ownRecords(t, b, startEcho(t, b, tls.VersionTLS13))
	want := echoPayload()[:45000]
	iov := make([]unix.Iovec, len(want)/3)
	for i := range iov {
		rawsock.SetIov(&iov[i], want[3*i:3*i+3])
	}
	if n := s.rec.seal(iov); n != len(want) {
		t.Fatalf("sealed %d of %d bytes in 3-byte pieces", n, len(want))
	}
	got, err := exchange(s, nil, len(want))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%d of %d bytes back, same %v: %v", len(got), len(want), bytes.Equal(got, want[:len(got)]), err)
	}
}

// testBundle is a CA and server certificate for 127.0.0.1.
func testBundle(t *testing.T) *tlsgen.Bundle {
	t.Helper()
	b, err := tlsgen.Generate(tlsgen.Options{IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// handshakeTo connects to addr and runs the handshake; the socket closes
// when the test ends.
func handshakeTo(t *testing.T, b *tlsgen.Bundle, addr string) *tlsStream {
	t.Helper()
	cfg, err := b.ClientConfig("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	fd, err := dialRaw(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	s, err := handshakeTLS(fd, cfg, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// ownRecords is handshakeTo requiring the session to run on its own
// records.
func ownRecords(t *testing.T, b *tlsgen.Bundle, addr string) *tlsStream {
	t.Helper()
	s := handshakeTo(t, b, addr)
	if s.rec == nil {
		t.Fatalf("no own records (suite %x)", s.conn.ConnectionState().CipherSuite)
	}
	return s
}
