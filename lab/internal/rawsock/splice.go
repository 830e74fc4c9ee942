package rawsock

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Sending a buffer by reference. Both ways hand the kernel references to
// the caller's pages instead of copying them into socket memory, so the
// caller must not write those bytes until the kernel is done with them:
// after the peer acknowledged them (splice), or after the completion
// arrived (zerocopy). linerate sends only ValueLayout bodies this way,
// which are written once, before anything is sent, and never again.

// PipeSize is the capacity asked of a send pipe: 256 page references.
const PipeSize = 1 << 20

// Pipe is a non-blocking pipe that carries page references from Vmsplice
// to SpliceOut. Its fields are read-only for the caller.
type Pipe struct {
	R, W int // read and write ends; -1 when closed
	Size int // capacity in bytes
	iov  unix.Iovec
}

// NewPipe opens a pipe of PipeSize, or the kernel's default capacity when
// it grants no more (an unprivileged user above fs.pipe-max-size).
func NewPipe() (*Pipe, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		return nil, err
	}
	size, err := unix.FcntlInt(uintptr(p[1]), unix.F_SETPIPE_SZ, PipeSize)
	if err != nil {
		size, err = unix.FcntlInt(uintptr(p[1]), unix.F_GETPIPE_SZ, 0)
	}
	if err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, err
	}
	return &Pipe{R: p[0], W: p[1], Size: size}, nil
}

// Close closes both ends; the kernel drops the page references still in
// the pipe.
func (p *Pipe) Close() {
	if p.R >= 0 {
		unix.Close(p.R)
		unix.Close(p.W)
		p.R, p.W = -1, -1
	}
}

// Vmsplice puts references to b's pages into the pipe, without
// SPLICE_F_GIFT: the pages stay the caller's, and shared.
func (p *Pipe) Vmsplice(b []byte) (int, error) {
	p.iov.Base = &b[0]
	p.iov.SetLen(len(b))
	r, _, e := unix.RawSyscall6(unix.SYS_VMSPLICE, uintptr(p.W), uintptr(unsafe.Pointer(&p.iov)), 1,
		unix.SPLICE_F_NONBLOCK, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// SpliceOut moves up to n bytes from the pipe into socket fd; more says
// more of the same message follows (MSG_MORE).
func (p *Pipe) SpliceOut(fd, n int, more bool) (int, error) {
	flags := uintptr(unix.SPLICE_F_NONBLOCK | unix.SPLICE_F_MOVE)
	if more {
		flags |= unix.SPLICE_F_MORE
	}
	m, _, e := unix.RawSyscall6(unix.SYS_SPLICE, uintptr(p.R), 0, uintptr(fd), 0, uintptr(n), flags)
	if e != 0 {
		return 0, e
	}
	return int(m), nil
}

// SendZerocopy sends p on fd with MSG_ZEROCOPY (the socket must have
// SO_ZEROCOPY set); the kernel reports when it let go of p's pages on the
// socket's error queue (ReapZerocopy).
func SendZerocopy(fd int, p []byte) (int, error) {
	r, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)),
		uintptr(unix.MSG_ZEROCOPY|unix.MSG_DONTWAIT), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// Zerocopy is what a socket's completion queue said so far.
type Zerocopy struct {
	Done   uint32 // sends completed: the kernel holds none of their pages
	Copied bool   // some completion said the kernel copied after all (loopback, veth, a NIC without scatter-gather)
	msg    unix.Msghdr
	buf    [128]byte
}

// ReapZerocopy reads fd's error queue until it is empty, counting the
// zerocopy sends it completes. A completion carries a range of send
// numbers [ee_info, ee_data]; the kernel merges consecutive ones.
func ReapZerocopy(fd int, z *Zerocopy) error {
	for {
		z.msg = unix.Msghdr{Control: &z.buf[0]}
		z.msg.SetControllen(len(z.buf))
		_, _, e := unix.RawSyscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&z.msg)),
			uintptr(unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT))
		if e == unix.EAGAIN {
			return nil
		}
		if e != 0 {
			return e
		}
		z.parse(int(z.msg.Controllen))
	}
}

// parse reads the sock_extended_err of one control message.
func (z *Zerocopy) parse(n int) {
	const hdr = unix.SizeofCmsghdr
	if n < hdr+int(unsafe.Sizeof(unix.SockExtendedErr{})) {
		return
	}
	ee := (*unix.SockExtendedErr)(unsafe.Pointer(&z.buf[hdr]))
	if ee.Origin != unix.SO_EE_ORIGIN_ZEROCOPY {
		return
	}
	z.Done += ee.Data - ee.Info + 1
	if ee.Code&unix.SO_EE_CODE_ZEROCOPY_COPIED != 0 {
		z.Copied = true
	}
}
