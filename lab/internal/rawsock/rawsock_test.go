package rawsock

import (
	"bytes"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// WritevUpTo sends at most its limit a call, whatever the iovecs' sizes,
// and leaves the caller's iovecs as they were: the caller advances them
// by what was written.
func TestWritevUpToSendsAtMostItsLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sizes []int
		limit int
		want  int
	}{
		{"under a chunk", []int{10, 20, 30}, SendChunk, 60},
		{"exactly a chunk", []int{SendChunk / 2, SendChunk / 2}, SendChunk, SendChunk},
		{"one iovec over", []int{SendChunk + 1}, SendChunk, SendChunk},
		{"cut in the second", []int{100, SendChunk, 5}, SendChunk, SendChunk},
		{"cut at a boundary", []int{SendChunk, 7}, SendChunk, SendChunk},
		{"8 MiB in three", []int{12, 8 << 20, 2}, SendChunk, SendChunk},
		{"a whole request under a large limit", []int{12, 512 << 10, 2}, 1 << 30, 512<<10 + 14},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p [2]int
			if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
				t.Fatal(err)
			}
			defer unix.Close(p[0])
			defer unix.Close(p[1])
			// Room for more than a chunk, so only WritevUpTo can cut.
			if _, err := unix.FcntlInt(uintptr(p[1]), unix.F_SETPIPE_SZ, 1<<20); err != nil {
				t.Fatal(err)
			}
			var bufs [][]byte
			var all []byte
			iov := make([]unix.Iovec, len(tc.sizes))
			for i, n := range tc.sizes {
				b := bytes.Repeat([]byte{byte('a' + i)}, n)
				bufs, all = append(bufs, b), append(all, b...)
				SetIov(&iov[i], b)
			}
			n, err := WritevUpTo(p[1], iov, tc.limit)
			if err != nil || n != tc.want {
				t.Fatalf("WritevUpTo = %d, %v; want %d", n, err, tc.want)
			}
			for i, b := range bufs {
				if int(iov[i].Len) != len(b) || iov[i].Base != &b[0] {
					t.Errorf("iovec %d changed: len %d, want %d", i, iov[i].Len, len(b))
				}
			}
			got := make([]byte, n+1)
			m, _ := unix.Read(p[0], got)
			if m != n || !bytes.Equal(got[:m], all[:n]) {
				t.Errorf("the pipe holds %d bytes, not the first %d of the iovecs", m, n)
			}
		})
	}
}

// A raw wait without a limit is refused: only a signal could end it.
func TestEpollWaitRefusesANegativeTimeout(t *testing.T) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(epfd)
	events := make([]unix.EpollEvent, 1)
	for _, old := range []bool{false, true} {
		if _, err := EpollWait(epfd, events, -1, &old); err != unix.EINVAL {
			t.Errorf("old=%v: a negative timeout gave %v, want EINVAL", old, err)
		}
		// A signal to the thread (the runtime's preemption) cuts a raw
		// wait short: EINTR, which the engine's loop takes as no event.
		if n, err := EpollWait(epfd, events, time.Millisecond, &old); n != 0 || (err != nil && err != unix.EINTR) {
			t.Errorf("old=%v: a 1 ms wait on nothing gave %d, %v", old, n, err)
		}
	}
}

// Discard's refusals that mean "read instead" are told apart from the
// errors of a socket that failed.
func TestTruncRefused(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{unix.EINVAL, true}, {unix.EOPNOTSUPP, true}, {unix.EFAULT, true},
		{nil, false}, {unix.EAGAIN, false}, {unix.ECONNRESET, false}, {unix.EBADF, false},
	} {
		if got := TruncRefused(tc.err); got != tc.want {
			t.Errorf("TruncRefused(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
