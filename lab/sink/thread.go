package sink

import (
	"fmt"
	"net"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Connections on threads of their own. Through Go's net, a connection's
// goroutine parks in the netpoller whenever its socket is full and is
// woken by another thread when it drains: beside one GET flow of 8 MiB
// the sink's other threads woke 8.27 times per request where the raw
// engine's woke 0.43 (make bench, 2026-12-05). A connection on a thread
// of its own takes its socket out of Go's netpoller and waits in the
// kernel itself (ppoll, made raw as rawsock's calls are: the thread
// keeps its P, so the runtime neither hands the P on nor wakes another
// thread for it), as the raw engine's workers wait in their own epoll.
//
// Why a bound: such a thread holds its P while it waits, so the sink
// raises GOMAXPROCS by one for each (Server.takeThread), and the
// runtime's monitor preempts each busy one every 10 ms, which wakes
// another thread or two to hand its P back (an idle one sleeps instead:
// threadConn.sleep). Those costs, the OS threads, and the Ps the
// scheduler's idle threads search for work all grow with the number of
// threads, while the netpoller's do not: past the bound, new
// connections are served on Go's netpoller, so thousands of connections
// cost goroutines, not threads.

// DefaultThreads is how many connections the sink serves on threads of
// their own at once (Server.Threads zero): four times the 8 flows of the
// ceiling row, small beside the thousands a bench may open.
const DefaultThreads = 32

// threadTick bounds a thread's wait in the kernel: how late it sees the
// sink stop, and how long a stop of the world waits for it when no
// signal cuts the wait short (GODEBUG=asyncpreemptoff=1), as the raw
// engine's epoll waits are bounded.
const threadTick = 50 * time.Millisecond

// threadConn is a connection's socket outside Go's netpoller, served by
// the thread its goroutine is locked to. It is a syscall.RawConn, so the
// connection's code is the same on either kind: Read and Write call f
// until it says it is done, waiting in ppoll between calls.
type threadConn struct {
	fd   int
	stop *atomic.Bool // Serve's: the sink is stopping
	pfd  unix.PollFd
	ts   unix.Timespec
}

// Control calls f with the socket.
func (t *threadConn) Control(f func(fd uintptr)) error {
	f(uintptr(t.fd))
	return nil
}

// Read calls f until it is done, waiting for the socket to be readable.
func (t *threadConn) Read(f func(fd uintptr) (done bool)) error { return t.await(f, unix.POLLIN) }

// Write calls f until it is done, waiting for the socket to be writable.
func (t *threadConn) Write(f func(fd uintptr) (done bool)) error { return t.await(f, unix.POLLOUT) }

func (t *threadConn) await(f func(fd uintptr) bool, events int16) error {
	for {
		if t.stop.Load() {
			return net.ErrClosed
		}
		if f(uintptr(t.fd)) {
			return nil
		}
		n, err := t.wait(events)
		if err == nil && n == 0 && events == unix.POLLIN {
			err = t.sleep()
		}
		if err != nil {
			return err
		}
	}
}

// wait waits in the kernel until the socket has events, threadTick
// passes or a signal comes (the runtime's preemption among them: EINTR,
// as ppoll is never restarted): how many sockets have events, 0 when
// none came.
func (t *threadConn) wait(events int16) (int, error) {
	t.pfd = unix.PollFd{Fd: int32(t.fd), Events: events}
	t.ts = unix.NsecToTimespec(int64(threadTick)) // ppoll writes back what was left
	n, _, e := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&t.pfd)), 1, uintptr(unsafe.Pointer(&t.ts)), 0, 0, 0)
	switch e {
	case 0:
		return int(n), nil
	case unix.EINTR:
		return 1, nil // look again
	}
	return 0, fmt.Errorf("sink poll on socket %d: %w", t.fd, e)
}

// sleep waits for a request on a connection that has been idle for
// threadTick, telling the scheduler, so its P goes to other goroutines
// and the runtime's monitor stops preempting it every 10 ms (each
// preemption of a locked goroutine wakes other threads to hand its P
// back): the runtime takes the P once, then the thread sleeps until the
// client writes or Serve stops (shutdown, Server.shutThreads). The
// runtime's preemption signal is blocked while it sleeps: it comes with
// the P's retaking, and would end every such wait 10 ms in, its P taken
// again each time.
func (t *threadConn) sleep() error {
	for !t.stop.Load() {
		t.pfd = unix.PollFd{Fd: int32(t.fd), Events: unix.POLLIN}
		_, _, e := unix.Syscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&t.pfd)), 1, 0,
			uintptr(unsafe.Pointer(&preemptSignal)), sigsetSize, 0)
		switch e {
		case 0:
			return nil
		case unix.EINTR:
			continue
		}
		return fmt.Errorf("sink poll on idle socket %d: %w", t.fd, e)
	}
	return nil
}

// preemptSignal is the signal set of SIGURG alone, the runtime's
// preemption signal.
var preemptSignal = func() (m unix.Sigset_t) {
	m.Val[0] = 1 << (unix.SIGURG - 1)
	return m
}()

// sigsetSize is the kernel's sigset_t in bytes: 64 signals.
const sigsetSize = 8

// threads is how many connections s serves on threads of their own at
// most (Threads, or DefaultThreads).
func (s *Server) threads() int {
	switch {
	case s.Threads < 0:
		return 0
	case s.Threads == 0:
		return DefaultThreads
	}
	return s.Threads
}

// takeThread counts one more connection on a thread of its own, if the
// bound allows, and makes GOMAXPROCS leave the other goroutines the Ps
// they had when Serve started: each such thread holds its P while it
// waits. GOMAXPROCS is not lowered as connections end.
func (s *Server) takeThread() bool {
	s.threadMu.Lock()
	defer s.threadMu.Unlock()
	if s.onThreads >= s.threads() {
		return false
	}
	s.onThreads++
	if want := s.procs + s.onThreads; runtime.GOMAXPROCS(0) < want {
		runtime.GOMAXPROCS(want)
	}
	return true
}

// releaseThread gives back what takeThread counted, and t's socket, if
// any, to be closed: Server.shutThreads no longer reaches it.
func (s *Server) releaseThread(t *threadConn) {
	s.threadMu.Lock()
	s.onThreads--
	delete(s.live, t)
	s.threadMu.Unlock()
}

// shutThreads ends the connections on threads of their own: a shutdown
// wakes a thread asleep on its socket (sleep); Serve has set its stop
// first, which they see once awake.
func (s *Server) shutThreads() {
	s.threadMu.Lock()
	defer s.threadMu.Unlock()
	for t := range s.live {
		_ = unix.Shutdown(t.fd, unix.SHUT_RDWR)
	}
}

// onThread serves c's socket on the calling goroutine's thread, locked
// to it until close, when the bound allows; nil otherwise. Go's copy of
// the socket is closed (which takes it out of the netpoller); the
// connection keeps a duplicate.
func (s *Server) onThread(c net.Conn, stop *atomic.Bool) (*sinkConn, error) {
	if !s.takeThread() {
		return nil, nil
	}
	fd, err := detach(c)
	if err != nil {
		s.releaseThread(nil)
		return nil, err
	}
	runtime.LockOSThread()
	t := &threadConn{fd: fd, stop: stop}
	s.threadMu.Lock()
	if s.live == nil {
		s.live = map[*threadConn]struct{}{}
	}
	s.live[t] = struct{}{}
	s.threadMu.Unlock()
	sc, err := s.connOn(t)
	if err != nil {
		s.closeThread(t)
		return nil, err
	}
	sc.th = t
	return sc, nil
}

// closeThread closes t's socket and gives its thread back.
func (s *Server) closeThread(t *threadConn) {
	s.releaseThread(t)
	unix.Close(t.fd)
	runtime.UnlockOSThread()
}

// detach duplicates c's socket (non-blocking, as Go keeps it) and
// closes c.
func detach(c net.Conn) (int, error) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return -1, fmt.Errorf("sink: %s is not TCP", c.RemoteAddr())
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return -1, fmt.Errorf("sink: connection from %s: %w", c.RemoteAddr(), err)
	}
	fd, derr := -1, error(nil)
	if err := raw.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, fmt.Errorf("sink: connection from %s: %w", c.RemoteAddr(), err)
	}
	if derr != nil {
		return -1, fmt.Errorf("sink: duplicate the socket of %s: %w", c.RemoteAddr(), derr)
	}
	c.Close()
	return fd, nil
}
