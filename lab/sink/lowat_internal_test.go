package sink

import (
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/internal/rawsock"
	"github.com/linerate/linerate/lab/labtest"
)

// While it drops a SET's payload, the sink lets the kernel gather
// rawsock.RecvLowat bytes before it wakes, as long as a whole chunk is
// still to come, and every byte wakes it for the payload's end; the drop
// ends when the last byte arrives. Kernel drop and copying drop both, on
// Go's netpoller and on a thread of its own.
func TestDropWakesPerChunkUntilThePayloadsEnd(t *testing.T) {
	eachDrop(t, func(t *testing.T, cl net.Conn, sc *sinkConn) {
		lowat := func() int { return lowatOf(t, sc) }
		// becomes waits for the mark the drop's goroutine sets.
		becomes := func(want int, when string) {
			t.Helper()
			for end := time.Now().Add(5 * time.Second); lowat() != want; {
				if time.Now().After(end) {
					t.Fatalf("%s: SO_RCVLOWAT %d, want %d", when, lowat(), want)
				}
				time.Sleep(time.Millisecond)
			}
		}
		const n = 4 << 20
		dropped := make(chan error, 1)
		go func() { dropped <- sc.drop(n) }()
		becomes(rawsock.RecvLowat, "nothing sent yet")
		payload := make([]byte, n)
		if _, err := cl.Write(payload[:n-1000]); err != nil {
			t.Fatal(err)
		}
		becomes(1, "1000 bytes to come")
		select {
		case err := <-dropped:
			t.Fatalf("the drop ended with 1000 bytes to come: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
		if _, err := cl.Write(payload[n-1000:]); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-dropped:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the drop did not end when its last byte came")
		}
	})
}

// eachDrop runs f on a connection of each kind, on Go's netpoller and on
// a thread of its own, for the kernel drop and the copying drop
// (LINERATE_NO_MSG_TRUNC=1) both.
func eachDrop(t *testing.T, f func(t *testing.T, cl net.Conn, sc *sinkConn)) {
	for _, tc := range []struct {
		copyDrop string
		thread   bool
	}{{"0", false}, {"1", false}, {"0", true}, {"1", true}} {
		t.Run(fmt.Sprintf("LINERATE_NO_MSG_TRUNC=%s/thread=%v", tc.copyDrop, tc.thread), func(t *testing.T) {
			t.Setenv("LINERATE_NO_MSG_TRUNC", tc.copyDrop)
			cl, sc := testConn(t, tc.thread)
			f(t, cl, sc)
		})
	}
}

// testConn is a loopback connection's client end and the sink's end,
// served on a thread of its own or on Go's netpoller, closed when the
// test ends.
func testConn(t *testing.T, thread bool) (net.Conn, *sinkConn) {
	t.Helper()
	cl, c := labtest.LoopbackPair(t)
	s := New(lab.OneSize(1024), 1, 1, 0)
	var sc *sinkConn
	var err error
	if thread {
		sc, err = s.onThread(c, new(atomic.Bool))
	} else {
		sc, err = s.newConn(c)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sc.close)
	return cl, sc
}

// lowatOf is sc's socket's SO_RCVLOWAT.
func lowatOf(t *testing.T, sc *sinkConn) (v int) {
	t.Helper()
	_ = sc.raw.Control(func(fd uintptr) {
		var err error
		if v, err = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVLOWAT); err != nil {
			t.Error(err)
		}
	})
	return v
}

// A payload already whole in the socket when its drop starts leaves the
// mark at one byte too: the next request, a few bytes, must wake the
// sink. (Dropped in one call, it once left the mark at RecvLowat, and a
// GET after a SET waited out the bench's request timeout.)
func TestDropOfAPayloadAlreadyInLeavesTheMarkAtOne(t *testing.T) {
	eachDrop(t, func(t *testing.T, cl net.Conn, sc *sinkConn) {
		const n = rawsock.RecvLowat + 1000
		_ = sc.raw.Control(func(fd uintptr) { // room for it all
			if err := unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 4*n); err != nil {
				t.Error(err)
			}
		})
		if _, err := cl.Write(make([]byte, n)); err != nil {
			t.Fatal(err)
		}
		for end := time.Now().Add(5 * time.Second); queued(t, sc) < n; time.Sleep(time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("%d of the %d bytes written reached the sink's socket", queued(t, sc), n)
			}
		}
		if err := sc.drop(n); err != nil {
			t.Fatal(err)
		}
		if got := lowatOf(t, sc); got > 1 {
			t.Errorf("SO_RCVLOWAT %d after the drop, want 1", got)
		}
	})
}

// queued is how many bytes wait in sc's socket's receive queue.
func queued(t *testing.T, sc *sinkConn) (v int) {
	t.Helper()
	_ = sc.raw.Control(func(fd uintptr) {
		var err error
		if v, err = unix.IoctlGetInt(int(fd), unix.SIOCINQ); err != nil {
			t.Error(err)
		}
	})
	return v
}
