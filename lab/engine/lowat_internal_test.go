package engine

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/internal/rawsock"
	"github.com/linerate/linerate/lab/labtest"
)

// A connection in the middle of a large payload asks the kernel to wake
// its worker only once rawsock.RecvLowat bytes wait (SO_RCVLOWAT), while
// at least that many of the payload are still to come; for the payload's
// last bytes, and for headers and small replies, every byte wakes it.
// Checked on a loopback socket through readMore, in the kernel-drop and
// the copying modes.
func TestReaderWakesPerChunkOnlyWhileAChunkIsComing(t *testing.T) {
	for _, noTrunc := range []bool{false, true} {
		cl, _ := labtest.LoopbackPair(t)
		f, err := cl.File() // a blocking duplicate: set it non-blocking, as the engine's are
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fd := int(f.Fd())
		if err := unix.SetNonblock(fd, true); err != nil {
			t.Fatal(err)
		}
		w := &lab.Workload{Verify: lab.VerifyNone}
		wk := &worker{w: w, sched: &schedule{}, noTrunc: noTrunc, scratch: make([]byte, scratchSize)}
		c := &rconn{wk: wk, fd: fd, rbuf: make([]byte, 4096)}
		lowat := func() int {
			v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVLOWAT)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		const size = 8 << 20
		for _, step := range []struct {
			what string
			pos  int64 // bytes of the value already read; -1: a reply header
			want int
		}{
			{"a header", -1, 1},
			{"a payload's start", 0, rawsock.RecvLowat},
			{"a chunk and a byte before its end", size - rawsock.RecvLowat - 1, rawsock.RecvLowat},
			{"a chunk before its end", size - rawsock.RecvLowat, rawsock.RecvLowat},
			{"a byte less than a chunk before its end", size - rawsock.RecvLowat + 1, 1},
			{"its last byte", size - 1, 1},
			{"the next payload", 0, rawsock.RecvLowat},
			{"the next header", -1, 1},
		} {
			c.st, c.valLen, c.pos, c.rlo, c.rhi = stHeader, 0, 0, 0, 0
			if step.pos >= 0 {
				c.st, c.valLen, c.pos = stPayload, size, step.pos
			}
			if _, err := c.readMore(); !rawsock.IsAgain(err) {
				t.Fatalf("noTrunc %v, %s: read %v, want EAGAIN (nothing was sent)", noTrunc, step.what, err)
			}
			if got := lowat(); got != step.want {
				t.Errorf("noTrunc %v, %s: SO_RCVLOWAT %d, want %d", noTrunc, step.what, got, step.want)
			}
		}
	}
}
