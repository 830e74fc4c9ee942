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
