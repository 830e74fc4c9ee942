package tuning

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// inNetns runs f on one thread inside the network namespace at path. Files
// and sockets f opens there stay in that namespace after the thread comes
// back. The thread is locked to a goroutine of its own, so if it cannot
// come back it ends with that goroutine instead of running other code in
// the wrong namespace.
func inNetns(path string, f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		target, err := os.Open(path)
		if err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("open network namespace: %w", err)
			return
		}
		defer target.Close()
		origin, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("open own network namespace: %w", err)
			return
		}
		defer origin.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("enter network namespace %s: %w", path, err)
			return
		}
		ferr := f()
		if err := unix.Setns(int(origin.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("leave network namespace %s: %w", path, err) // the thread stays locked and ends here
			return
		}
		runtime.UnlockOSThread()
		done <- ferr
	}()
	return <-done
}

// MachineNetns is this process's hold on the network namespace it started
// in (the machine's, for a coordinator), named by a path another process
// can open while the hold lasts. /proc/PID/ns/net would name the namespace
// of the main thread, which a goroutine locked to it may have moved into
// another namespace for a moment; an open descriptor cannot move.
type MachineNetns struct {
	f    *os.File
	Path string // /proc/PID/fd/N
}

// OpenMachineNetns takes the hold from an unlocked goroutine: threads
// that carry no locked goroutine are always in the process's own
// namespace (inNetns, and netns.Host.Do, leave a namespace before they
// unlock).
func OpenMachineNetns() (*MachineNetns, error) {
	type result struct {
		f   *os.File
		err error
	}
	done := make(chan result, 1)
	go func() {
		f, err := os.Open("/proc/thread-self/ns/net")
		done <- result{f, err}
	}()
	r := <-done
	if r.err != nil {
		return nil, fmt.Errorf("open the machine's network namespace: %w", r.err)
	}
	return &MachineNetns{f: r.f, Path: fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), r.f.Fd())}, nil
}

// Close lets the hold go.
func (m *MachineNetns) Close() error { return m.f.Close() }
