package rawsock

import (
	"bytes"
	"io"
	"net"
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// tcpPair is a connected loopback pair: a raw non-blocking fd to send
// on and a net.Conn to read from.
func tcpPair(t *testing.T) (int, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	f, err := c.(*net.TCPConn).File() // a dup, blocking
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return int(f.Fd()), s
}

// requireZerocopy sets SO_ZEROCOPY on fd. Every kernel since 4.14 takes
// it; qemu-user (.ci/arm64 names it in LINERATE_EMULATOR) does not pass
// it on and says so with ENOPROTOOPT: the test is then skipped, by name.
func requireZerocopy(t *testing.T, fd int) {
	err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ZEROCOPY, 1)
	if err == unix.ENOPROTOOPT && os.Getenv("LINERATE_EMULATOR") != "" {
		// Said by name in the run's output, not a silent pass.
		t.Skipf("under %s: SO_ZEROCOPY: %v (qemu-user does not pass it on; natively this runs)", os.Getenv("LINERATE_EMULATOR"), err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func waitWritable(t *testing.T, fd int) {
	if _, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}, 1000); err != nil && err != unix.EINTR {
		t.Fatal(err)
	}
}

// pattern is n bytes that differ from any shifted copy of themselves.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>8)
	}
	return b
}

// Bytes sent by reference arrive as they are, in order, whichever way:
// an odd offset and length (pages shared at the ends), more than a pipe
// holds, and more than a zerocopy send takes in one call.
func TestByReferenceSendsArriveIntact(t *testing.T) {
	body := pattern(3<<20 + 123)
	for _, tc := range []struct {
		name string
		send func(t *testing.T, fd int, b []byte) int
	}{
		{"splice", func(t *testing.T, fd int, b []byte) int {
			p, err := NewPipe()
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			n, err := p.Vmsplice(b[:min(len(b), p.Size)])
			if err != nil {
				t.Fatal(err)
			}
			for sent := 0; sent < n; {
				m, err := p.SpliceOut(fd, n-sent, true)
				if IsAgain(err) {
					waitWritable(t, fd)
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				sent += m
			}
			return n
		}},
		{"zerocopy", func(t *testing.T, fd int, b []byte) int {
			n, err := SendZerocopy(fd, b[:min(len(b), SendChunk)])
			if IsAgain(err) {
				waitWritable(t, fd)
				return 0
			}
			if err != nil {
				t.Fatal(err)
			}
			return n
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fd, peer := tcpPair(t)
			if tc.name == "zerocopy" {
				requireZerocopy(t, fd)
			}
			got := make(chan []byte, 1)
			go func() { b, _ := io.ReadAll(io.LimitReader(peer, int64(len(body)-5))); got <- b }()
			for off := 5; off < len(body); {
				off += tc.send(t, fd, body[off:])
			}
			if b := <-got; !bytes.Equal(b, body[5:]) {
				t.Fatalf("%d bytes arrived, not the %d sent as they were", len(b), len(body)-5)
			}
		})
	}
}

// A zerocopy completion is counted by the range of sends it covers, and
// one that says the kernel copied is told apart.
func TestZerocopyCompletionsCounted(t *testing.T) {
	var z Zerocopy
	put := func(info, data uint32, code uint8, origin uint8) {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&z.buf[0]))
		h.Level, h.Type = unix.SOL_IP, unix.IP_RECVERR
		ee := (*unix.SockExtendedErr)(unsafe.Pointer(&z.buf[unix.SizeofCmsghdr]))
		*ee = unix.SockExtendedErr{Origin: origin, Code: code, Info: info, Data: data}
		z.parse(unix.SizeofCmsghdr + int(unsafe.Sizeof(unix.SockExtendedErr{})))
	}
	put(0, 4, 0, unix.SO_EE_ORIGIN_ZEROCOPY)
	put(5, 5, unix.SO_EE_CODE_ZEROCOPY_COPIED, unix.SO_EE_ORIGIN_ZEROCOPY)
	put(6, 9, 0, unix.SO_EE_ORIGIN_ICMP) // not a completion
	if z.Done != 6 || !z.Copied {
		t.Fatalf("Done %d, Copied %v; want 6, true", z.Done, z.Copied)
	}
}
