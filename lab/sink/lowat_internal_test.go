package sink

import (
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
// ends when the last byte arrives. Kernel drop and copying drop both.
func TestDropWakesPerChunkUntilThePayloadsEnd(t *testing.T) {
	for _, copyDrop := range []string{"0", "1"} {
		t.Run("LINERATE_NO_MSG_TRUNC="+copyDrop, func(t *testing.T) {
			t.Setenv("LINERATE_NO_MSG_TRUNC", copyDrop)
			cl, c := labtest.LoopbackPair(t)
			sc, err := New(lab.OneSize(1024), 1, 1, 0).newConn(c)
			if err != nil {
				t.Fatal(err)
			}
			lowat := func() (v int) {
				_ = sc.raw.Control(func(fd uintptr) {
					var err error
					if v, err = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVLOWAT); err != nil {
						t.Error(err)
					}
				})
				return v
			}
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
}
