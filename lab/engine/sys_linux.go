package engine

import (
	"fmt"
	"net"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/fields"
)

// threadUsage is the calling thread's CPU time and minor faults.
type threadUsage struct {
	user, sys time.Duration
	minflt    int64
}

func getUsage(who int) threadUsage {
	var ru unix.Rusage
	if err := unix.Getrusage(who, &ru); err != nil {
		return threadUsage{}
	}
	return threadUsage{
		user:   time.Duration(ru.Utime.Nano()),
		sys:    time.Duration(ru.Stime.Nano()),
		minflt: ru.Minflt,
	}
}

func (a threadUsage) sub(b threadUsage) threadUsage {
	return threadUsage{user: a.user - b.user, sys: a.sys - b.sys, minflt: a.minflt - b.minflt}
}

// dialRaw connects with the Go dialer (resolution, timeout), then keeps a
// duplicate of the socket in non-blocking mode for the worker's own epoll
// loop and closes Go's copy.
func dialRaw(addr string, timeout time.Duration) (int, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return -1, err
	}
	defer c.Close()
	tc := c.(*net.TCPConn)
	_ = tc.SetNoDelay(true)
	rc, err := tc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(s uintptr) {
		fd, derr = unix.Dup(int(s))
	}); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, fmt.Errorf("dup socket: %w", derr)
	}
	unix.CloseOnExec(fd)
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// pinThread pins the calling OS thread to cpu. The caller must hold
// runtime.LockOSThread for the pin to mean anything.
func pinThread(cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pin worker thread to cpu %d: %w", cpu, err)
	}
	return nil
}

// availableCPUs is the set of CPUs this process may run on.
func availableCPUs() (lab.CPUList, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, err
	}
	var out lab.CPUList
	for c := 0; c < 1024; c++ {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// checkCPUs refuses a cpu list naming CPUs this process cannot run on; the
// run must never silently go unpinned.
func checkCPUs(want lab.CPUList) error {
	have, err := availableCPUs()
	if err != nil {
		return fmt.Errorf("read cpu affinity: %w", err)
	}
	ok := map[int]bool{}
	for _, c := range have {
		ok[c] = true
	}
	var missing lab.CPUList
	for _, c := range want {
		if !ok[c] {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return &fields.FieldError{Field: "--cpu-list", Msg: fmt.Sprintf("CPUs %s are not available on this host (this process may use %s); refusing to run unpinned", missing, have)}
	}
	return nil
}
