// Package stopsignal is how a linerate command ends on a signal: the first
// Ctrl-C, SIGTERM or hangup stops the work so what it started is torn down;
// the teardown is abandoned only on a third signal soon after a second; a
// broken pipe of its own output counts as a hangup.
package stopsignal

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// abandonWindow is how long after a repeated signal another one abandons
// the teardown.
const abandonWindow = 10 * time.Second

// signalAction is what one stop signal does.
type signalAction int

const (
	actStop    signalAction = iota // cancel the work; the teardown runs
	actWarn                        // say a further one abandons the teardown
	actAbandon                     // exit at once
)

// signalPolicy decides what each stop signal does. The first cancels the
// work. The teardown that follows must run to its end: a second one
// (an impatient Ctrl-C, the terminal closing) does not end it, it only
// opens a window in which a third abandons it. A window that closes
// unused is forgotten.
type signalPolicy struct {
	window  time.Duration
	stopped bool
	armed   time.Time // when the window opened; zero: closed
}

func (p *signalPolicy) on(now time.Time) signalAction {
	switch {
	case !p.stopped:
		p.stopped = true
		return actStop
	case !p.armed.IsZero() && now.Sub(p.armed) <= p.window:
		return actAbandon
	}
	p.armed = now
	return actWarn
}

// Context returns a context cancelled by the first stop signal,
// after which later ones follow signalPolicy: messages go to out, and
// abandon is called (it exits) on a third within the window. A broken
// pipe is an error to the writer, not the end of the process, which
// would skip the teardown: when it is this process's own output that is
// gone (an SSH session without a terminal closed: no hangup comes), it is
// a stop like the hangup; any other (a child's input) is only the
// writer's error. It never counts as a second or third signal.
func Context(parent context.Context, out io.Writer, abandon func()) context.Context {
	ctx, cancel := context.WithCancel(parent)
	// Notify, not Ignore: an ignored signal would be inherited by the
	// servers and tools linerate starts. Stop signals: Ctrl-C, a kill, and
	// the hangup of the terminal or SSH session the command runs in (its
	// output goes nowhere then, but what it started must still be torn
	// down).
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	go func() {
		p := signalPolicy{window: abandonWindow}
		for sig := range ch {
			if sig == syscall.SIGPIPE {
				if p.stopped || !outputGone() {
					continue
				}
				sig = syscall.SIGHUP
			}
			switch p.on(time.Now()) {
			case actStop:
				fmt.Fprintf(out, "linerate: %s: stopping; what was started is torn down\n", signalName(sig))
				cancel()
			case actWarn:
				fmt.Fprintf(out, "linerate: tearing down, Ctrl-C again in %d s to abandon\n", int(abandonWindow/time.Second))
			case actAbandon:
				fmt.Fprintln(out, "linerate: teardown abandoned; local servers end with linerate, "+
					"'linerate infra gc' removes netns and aws leftovers, 'linerate tune revert --snapshot' undoes tuning")
				abandon()
			}
		}
	}()
	return ctx
}

// outputGone says whether standard output or error is a pipe or socket
// whose reader has gone.
func outputGone() bool {
	fds := []unix.PollFd{{Fd: 1, Events: unix.POLLOUT}, {Fd: 2, Events: unix.POLLOUT}}
	if _, err := unix.Poll(fds, 0); err != nil {
		return false
	}
	for _, f := range fds {
		if f.Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
			return true
		}
	}
	return false
}

func signalName(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "interrupt"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "hangup (terminal or session closed)"
	}
	return s.String()
}
