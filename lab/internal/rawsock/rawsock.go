// Package rawsock holds the raw socket calls of linerate's hot paths (the
// raw engine's and the sink's): they take preallocated buffers and never
// allocate.
//
// They are made without telling Go's scheduler (RawSyscall): every one is
// on a non-blocking socket, or an epoll wait bounded by its timeout, which
// a preemption signal cuts short (EINTR) when the runtime needs the thread.
// Through Syscall, a thread that lives in socket calls is found in one
// past its 10 ms time slice, and the runtime's monitor takes its P back
// and then polls every 20 µs for a while: 3,000-5,000 wake-ups a second on
// these 2-vCPU VMs, each taking a CPU the copies need. A raw call leaves
// the P running, so the monitor only sends a preemption signal and backs
// off. The raw engine sizes GOMAXPROCS so a worker holding its P in an
// epoll wait keeps no other goroutine from running.
package rawsock

import (
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// MaxDiscard bounds one Discard call.
const MaxDiscard = 1 << 30

// discardByte is the buffer pointer handed to recvfrom with MSG_TRUNC: on
// TCP the kernel drops the bytes without copying, so it is never written.
var discardByte [64]byte

// Discard drops up to n bytes of the socket's receive queue in the
// kernel. It returns how many were dropped.
func Discard(fd int, n int) (int, error) {
	r, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&discardByte[0])),
		uintptr(n), uintptr(unix.MSG_TRUNC|unix.MSG_DONTWAIT), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// TruncRefused says whether err, from Discard, means this kernel does not
// drop payloads with MSG_TRUNC, so the caller must read them instead:
// EINVAL or EOPNOTSUPP (a socket or kernel without it), or EFAULT, which
// qemu-user gives because it checks that n bytes at the buffer are
// writable before the call (the arm64 build under emulation, seen here).
// Nothing was dropped when it is true.
func TruncRefused(err error) bool {
	return err == unix.EINVAL || err == unix.EOPNOTSUPP || err == unix.EFAULT
}

// Read reads into p.
func Read(fd int, p []byte) (int, error) {
	r, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// Write writes p.
func Write(fd int, p []byte) (int, error) {
	r, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// Writev writes iov with writev.
func Writev(fd int, iov []unix.Iovec) (int, error) {
	r, _, e := unix.RawSyscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// SendChunk bounds the bytes of one send call of the sink's GET replies
// and the raw engine's plain-TCP requests. A socket's lock is held for
// the whole call and the ACKs that arrive meanwhile wait in its backlog,
// so a call of megabytes sends in bursts: one flow on the netns veth pair
// moved 12-13 Gbit/s in 8 MiB writes and 20-23 in 128 KiB ones, the size
// iperf3 writes (a plain Python sender and reader, 2-vCPU VM, alternating
// runs).
const SendChunk = 128 << 10

// WritevUpTo writes at most limit bytes of iov with writev.
func WritevUpTo(fd int, iov []unix.Iovec, limit int) (int, error) {
	total := 0
	for i := range iov {
		l := int(iov[i].Len)
		if total+l > limit {
			iov[i].SetLen(limit - total) // restored below: the caller's iov is its record of what is left
			n, err := Writev(fd, iov[:i+1])
			iov[i].SetLen(l)
			return n, err
		}
		total += l
	}
	return Writev(fd, iov)
}

// RecvLowat is how many bytes a reader in the middle of a large payload
// lets the kernel gather before it wakes (SO_RCVLOWAT), while at least
// that many are still to come. Woken per 64 KiB segment, the reader and
// the sender's wake-ups cost a flow on the netns veth about a fifth of its
// rate: one GET flow moved a median 16.0 Gbit/s woken per segment and
// 20.6 woken per 256 KiB over eight alternating runs, 4 flows 20.1 and
// 24.4 over four (a 2-vCPU VM; iperf3 read 23.7 and 23.3 between them).
const RecvLowat = 256 << 10

// LowatFor is the SO_RCVLOWAT for a reader with left bytes of a payload
// still to come: RecvLowat while a whole chunk is coming, one otherwise,
// so a payload's end (or a small reply after it) is never held back.
func LowatFor(left int64) int {
	if left >= RecvLowat {
		return RecvLowat
	}
	return 1
}

// ChunkBefore is how much of left bytes a reader takes before it asks
// LowatFor again: all of them once fewer than RecvLowat are left, else
// as many as leave RecvLowat-1, so the low mark drops to one before the
// payload's end is read.
func ChunkBefore(left int64) int64 {
	if left >= RecvLowat {
		return left - RecvLowat + 1
	}
	return left
}

// SetRecvLowat sets fd's SO_RCVLOWAT. The kernel makes room for it in the
// receive buffer (twice n) unless the buffer's size was fixed by hand.
func SetRecvLowat(fd, n int) error {
	v := int32(n)
	_, _, e := unix.RawSyscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_RCVLOWAT,
		uintptr(unsafe.Pointer(&v)), 4, 0)
	if e != 0 {
		return e
	}
	return nil
}

// SetIov points v at p.
func SetIov(v *unix.Iovec, p []byte) {
	if len(p) == 0 {
		v.Base, v.Len = &discardByte[0], 0
		return
	}
	v.Base = &p[0]
	v.SetLen(len(p))
}

// IsAgain says whether err is a non-blocking socket's "try later".
func IsAgain(err error) bool { return err == unix.EAGAIN || err == syscall.EWOULDBLOCK }

// EpollWait waits for events up to timeout with nanosecond precision
// (epoll_pwait2, Linux 5.11), so a paced request is not held to the next
// millisecond; on a kernel without it, it sets *old and waits with
// epoll_wait's milliseconds, rounded up, from then on. The timeout must
// not be negative: a raw wait without a limit could end only by a signal,
// and none comes under GODEBUG=asyncpreemptoff=1 (there, a stop of the
// world waits out a worker's wait, at most its timeout).
func EpollWait(epfd int, events []unix.EpollEvent, timeout time.Duration, old *bool) (int, error) {
	if timeout < 0 {
		return 0, unix.EINVAL
	}
	if !*old {
		t := unix.NsecToTimespec(int64(timeout))
		r, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT2, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])),
			uintptr(len(events)), uintptr(unsafe.Pointer(&t)), 0, 0)
		if e != unix.ENOSYS {
			if e != 0 {
				return 0, e
			}
			return int(r), nil
		}
		*old = true
	}
	ms := int((timeout + time.Millisecond - 1) / time.Millisecond)
	r, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])),
		uintptr(len(events)), uintptr(ms), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}
