package labtest

import (
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/lab/internal/rawsock"
)

// TimerLate is the machine's own lateness for a paced schedule: a locked
// thread sleeps to n deadlines, every apart, in epoll waits as the raw
// engine's worker does, and counts the wakes more than after past their
// deadline. Measured beside a paced run, it tells a late engine from a
// shared machine whose timers wake late (here, in a noisy spell, 6-9 % of
// a 400/s engine's requests were late for tens of seconds).
func TimerLate(n int, every, after time.Duration) (late int, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return 0, fmt.Errorf("epoll for the timer probe: %w", err)
	}
	defer unix.Close(epfd)
	events := make([]unix.EpollEvent, 1)
	var old bool
	start := time.Now()
	for i := 1; i <= n; i++ {
		due := start.Add(time.Duration(i) * every)
		for d := time.Until(due); d > 0; d = time.Until(due) {
			if _, err := rawsock.EpollWait(epfd, events, d, &old); err != nil && err != unix.EINTR {
				return late, fmt.Errorf("timer probe wait: %w", err)
			}
		}
		if time.Since(due) > after {
			late++
		}
	}
	return late, nil
}
