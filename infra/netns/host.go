// Package netns provides hosts on this machine: the local provider (both
// roles on this host, over loopback) and the netns provider (two network
// namespaces joined by a veth pair, 198.18.0.1 ↔ 198.18.0.2).
package netns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/vishvananda/netns"
)

// Host is this machine, or one of its named network namespaces. Commands
// in a namespace run under `ip netns exec`, which also gives them the
// namespace's view of /sys (tuning reads /sys/class/net there).
type Host struct {
	Label string
	// Namespace is the named network namespace (/run/netns/NAME); "" is the
	// namespace linerate itself runs in.
	Namespace string
	Addr      netip.Addr
	// Binary is the linerate binary to run on this host; "" is the running
	// executable.
	Binary string
}

var (
	_ infra.Entered     = (*Host)(nil)
	_ infra.SharedFiles = (*Host)(nil)
)

// Of is the namespace host behind h, nil when h is not one of this
// package's hosts. It is for tests that bring up a netns pair and reach
// into it (a namespace's name, a command run in it): no file outside this
// package asserts *Host (hosts_test.go holds that). Code that works with
// any provider asks for infra.Entered or infra.SharedFiles instead.
func Of(h infra.Host) *Host {
	n, _ := h.(*Host)
	return n
}

// Enter is `ip netns exec NAME`, or nil for this process's own namespace.
func (h *Host) Enter() []string {
	if h.Namespace == "" {
		return nil
	}
	return []string{"ip", "netns", "exec", h.Namespace}
}

// SharesFiles is true: a namespace has this machine's file system.
func (h *Host) SharesFiles() bool { return true }

// Name labels the host.
func (h *Host) Name() string {
	if h.Label != "" {
		return h.Label
	}
	if h.Namespace != "" {
		return "netns " + h.Namespace
	}
	return "local"
}

// DataAddr is the address servers listen on.
func (h *Host) DataAddr() netip.Addr { return h.Addr }

// Close does nothing: a local host holds no connection.
func (h *Host) Close() error { return nil }

// Run runs argv and returns its standard output (infra.Runner).
func (h *Host) Run(ctx context.Context, argv ...string) ([]byte, error) {
	return infra.RunCommand(ctx, h, argv...)
}

// Command is the exec.Cmd that runs argv on this host; callers that need a
// process handle (a server they stop themselves) use it directly.
func (h *Host) Command(ctx context.Context, argv ...string) *exec.Cmd {
	argv = append(h.Enter(), argv...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	// Its own process group, so an interrupt of linerate reaches the
	// command only through the context, and a kill reaches its children.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// Exec runs a command, streaming its output.
func (h *Host) Exec(ctx context.Context, c infra.Command) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("%s: %w", h.Name(), err)
	}
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, c.Timeout, infra.ErrTimeout)
		defer cancel()
	}
	cmd := h.Command(ctx, c.Argv...)
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.Dir = c.Dir
	cmd.Stdin = c.Stdin
	cmd.Stdout, cmd.Stderr = orDiscard(c.Stdout), orDiscard(c.Stderr)
	err := cmd.Run()
	if err == nil {
		return nil
	}
	if cause := context.Cause(ctx); cause != nil {
		if errors.Is(cause, infra.ErrTimeout) {
			return fmt.Errorf("%s: %v after %v: %w", h.Name(), c.Argv, c.Timeout, infra.ErrTimeout)
		}
		return fmt.Errorf("%s: %v: %w", h.Name(), c.Argv, cause)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return &infra.ExitError{Host: h.Name(), Argv: c.Argv, Code: ee.ExitCode()}
	}
	return fmt.Errorf("%s: run %v: %w", h.Name(), c.Argv, err)
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// Put copies a file: the namespaces share this machine's file system.
func (h *Host) Put(ctx context.Context, local, remote string, mode fs.FileMode) error {
	return copyFile(local, remote, mode)
}

// Get copies a file.
func (h *Host) Get(ctx context.Context, remote, local string) error {
	return copyFile(remote, local, 0o644)
}

func copyFile(from, to string, mode fs.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("copy %s: %w", from, err)
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(to), ".put-*")
	if err != nil {
		return fmt.Errorf("copy %s to %s: %w", from, to, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return fmt.Errorf("copy %s to %s: %w", from, to, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("copy %s to %s: %w", from, to, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("copy %s to %s: %w", from, to, err)
	}
	if err := os.Rename(tmp.Name(), to); err != nil {
		return fmt.Errorf("copy %s to %s: %w", from, to, err)
	}
	return nil
}

// Facts reports the machine's architecture and CPUs and the namespace's
// NICs.
func (h *Host) Facts(ctx context.Context) (infra.HostFacts, error) {
	return infra.ProbeFacts(ctx, h)
}

// Linerate is the binary to run: Binary, or the running executable (the
// namespaces share the file system, so nothing is copied).
func (h *Host) Linerate(ctx context.Context) (string, error) {
	if h.Binary != "" {
		return h.Binary, nil
	}
	p, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("%s: find the linerate binary: %w", h.Name(), err)
	}
	return p, nil
}

// Do runs fn on a thread that is inside the host's namespace, for work
// done in this process (ethtool ioctls, opening sockets). A socket keeps the
// namespace it was created in, so a connection dialled inside Do can be
// used from any goroutine afterwards.
func (h *Host) Do(fn func() error) error {
	if h.Namespace == "" {
		return fn()
	}
	errc := make(chan error, 1)
	// A fresh goroutine whose thread is thrown away if it cannot get back
	// to the original namespace: no other goroutine ever runs there.
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("%s: current namespace: %w", h.Name(), err)
			return
		}
		defer orig.Close()
		target, err := netns.GetFromName(h.Namespace)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("%s: open namespace: %w", h.Name(), err)
			return
		}
		defer target.Close()
		if err := netns.Set(target); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("%s: enter namespace: %w", h.Name(), err)
			return
		}
		ferr := fn()
		if err := netns.Set(orig); err != nil {
			// Leave the thread locked: it exits with this goroutine.
			errc <- errors.Join(ferr, fmt.Errorf("%s: leave namespace: %w", h.Name(), err))
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// DialContext dials from inside the host's namespace (for an SSH client or
// a control connection that must start there).
func (h *Host) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := h.Do(func() error {
		var d net.Dialer
		var err error
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// Listen listens inside the host's namespace.
func (h *Host) Listen(network, addr string) (net.Listener, error) {
	var l net.Listener
	err := h.Do(func() error {
		var err error
		l, err = net.Listen(network, addr)
		return err
	})
	return l, err
}
