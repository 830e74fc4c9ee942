// Package sshhost drives hosts the user already has over SSH: commands with
// timeouts and streamed output, files over SFTP, the linerate binary for the
// host's architecture uploaded on first use, host keys pinned on first use.
package sshhost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
)

// Config is one SSH host.
type Config struct {
	Label string // "server", "client"; default the address
	// Addr is host or host:port (port 22 when left out).
	Addr string
	User string
	// KeyFile is a private key in OpenSSH or PEM form, without passphrase.
	// Signer may be given instead (tests, keys created by a provider).
	KeyFile string
	Signer  ssh.Signer
	// KnownHosts is the file that pins host keys: a host not in it is
	// added on first use, a host whose key differs is refused.
	KnownHosts string
	// DataAddr is the host's data-plane address; default the IP of Addr.
	DataAddr netip.Addr
	// Dist holds linerate-linux-amd64 and linerate-linux-arm64 (`make
	// dist`); default "dist".
	Dist string
	// RemoteDir is where the binary is uploaded, relative to the login
	// directory unless absolute; default ".cache/linerate".
	RemoteDir string
	// Dial makes the TCP connection; default a plain dialer. Tests dial from
	// inside a network namespace.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// ConnectTimeout bounds dial plus handshake; default 15s.
	ConnectTimeout time.Duration
}

// Validate names the bad field.
func (c Config) Validate() error {
	if c.Addr == "" {
		return errors.New("ssh host address: empty")
	}
	if _, _, err := net.SplitHostPort(c.hostPort()); err != nil {
		return fmt.Errorf("ssh host address: %q: %v (want host or host:port)", c.Addr, err)
	}
	if c.User == "" {
		return fmt.Errorf("ssh host %s user: empty", c.Addr)
	}
	if c.KeyFile == "" && c.Signer == nil {
		return fmt.Errorf("ssh host %s key: no key file given", c.Addr)
	}
	if c.KnownHosts == "" {
		return fmt.Errorf("ssh host %s known_hosts: no file given (host keys are always pinned)", c.Addr)
	}
	if c.ConnectTimeout < 0 {
		return fmt.Errorf("ssh host %s connect timeout: negative", c.Addr)
	}
	return nil
}

func (c Config) hostPort() string {
	if _, _, err := net.SplitHostPort(c.Addr); err == nil {
		return c.Addr
	}
	return net.JoinHostPort(strings.Trim(c.Addr, "[]"), "22")
}

// Host is a connected SSH host. The connection is made on first use and
// made again once when it drops.
type Host struct {
	cfg    Config
	signer ssh.Signer

	mu     sync.Mutex
	client *ssh.Client
	dials  int // connections made, for tests and messages

	binMu   sync.Mutex
	binPath string // uploaded linerate binary
	uploads int
	// uploadedBytes is what the binary uploads sent over the wire.
	uploadedBytes int64
	arch          string
}

var _ infra.Host = (*Host)(nil)

// New checks the configuration and loads the key; it does not connect.
func New(cfg Config) (*Host, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Dist == "" {
		cfg.Dist = "dist"
	}
	if cfg.RemoteDir == "" {
		cfg.RemoteDir = ".cache/linerate"
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 15 * time.Second
	}
	if !cfg.DataAddr.IsValid() {
		host, _, _ := net.SplitHostPort(cfg.hostPort())
		if a, err := netip.ParseAddr(host); err == nil {
			cfg.DataAddr = a
		}
	}
	h := &Host{cfg: cfg, signer: cfg.Signer}
	if h.signer == nil {
		pem, err := os.ReadFile(cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("ssh host %s key: %w", cfg.Addr, err)
		}
		if h.signer, err = ssh.ParsePrivateKey(pem); err != nil {
			return nil, fmt.Errorf("ssh host %s key %s: %w", cfg.Addr, cfg.KeyFile, err)
		}
	}
	return h, nil
}

// Name labels the host.
func (h *Host) Name() string {
	if h.cfg.Label != "" {
		return h.cfg.Label
	}
	return h.cfg.Addr
}

// DataAddr is the host's data-plane address.
func (h *Host) DataAddr() netip.Addr { return h.cfg.DataAddr }

// Dials is how many connections were made so far.
func (h *Host) Dials() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.dials
}

// Connect makes the connection now (Up uses it to fail early and pin keys).
func (h *Host) Connect(ctx context.Context) error {
	_, err := h.conn(ctx)
	return err
}

// Close closes the connection.
func (h *Host) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.client == nil {
		return nil
	}
	err := h.client.Close()
	h.client = nil
	return err
}

func (h *Host) conn(ctx context.Context) (*ssh.Client, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.client != nil {
		return h.client, nil
	}
	addr := h.cfg.hostPort()
	dctx, cancel := context.WithTimeout(ctx, h.cfg.ConnectTimeout)
	defer cancel()
	dial := h.cfg.Dial
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	h.dials++
	nc, err := dial(dctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ssh %s: dial: %w", h.Name(), err)
	}
	// The handshake has no context: a deadline bounds it, and a cancel
	// closes the socket under it.
	deadline, _ := dctx.Deadline()
	nc.SetDeadline(deadline)
	stop := context.AfterFunc(dctx, func() { nc.Close() })
	cc, chans, reqs, err := ssh.NewClientConn(nc, addr, &ssh.ClientConfig{
		User:            h.cfg.User,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(h.signer)},
		HostKeyCallback: pinning(h.cfg.KnownHosts),
		Timeout:         h.cfg.ConnectTimeout,
	})
	stop()
	if err != nil {
		nc.Close()
		var mm *HostKeyMismatchError
		if errors.As(err, &mm) {
			return nil, fmt.Errorf("ssh %s: %w", h.Name(), mm)
		}
		if cerr := dctx.Err(); cerr != nil {
			return nil, fmt.Errorf("ssh %s: handshake: %w", h.Name(), cerr)
		}
		return nil, fmt.Errorf("ssh %s: handshake: %w", h.Name(), err)
	}
	nc.SetDeadline(time.Time{})
	h.client = ssh.NewClient(cc, chans, reqs)
	go h.keepalive(h.client)
	return h.client, nil
}

// KeepaliveEvery is how often an idle connection is checked. A peer that
// stopped answering (a host gone, a half-open connection) is noticed
// within two intervals and the connection closed, so commands on it fail
// instead of waiting forever; a silent bench could otherwise keep a paid
// instance pair up until its dead-man shutdown.
var KeepaliveEvery = 15 * time.Second

// keepalive watches c until it closes, for any reason: a closed client
// leaves no watcher waiting for its next tick.
func (h *Host) keepalive(c *ssh.Client) {
	closed := make(chan struct{})
	go func() {
		c.Wait() // returns once the connection is closed, for any reason
		close(closed)
	}()
	t := time.NewTicker(KeepaliveEvery)
	defer t.Stop()
	for {
		select {
		case <-closed:
			return
		case <-t.C:
		}
		answered := make(chan error, 1)
		go func() {
			// OpenSSH answers an unknown global request with a failure:
			// any answer means the peer is there.
			_, _, err := c.SendRequest("keepalive@openssh.com", true, nil)
			answered <- err
		}()
		select {
		case err := <-answered:
			if err != nil { // the connection is closed: nothing to watch
				return
			}
		case <-closed:
			return
		case <-time.After(KeepaliveEvery):
			h.drop(c)
			return
		}
	}
}

// drop forgets a connection that failed, so the next use dials again.
func (h *Host) drop(c *ssh.Client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.client == c {
		h.client.Close()
		h.client = nil
	}
}

// errDropped marks a failure of the connection rather than of the command.
type errDropped struct{ err error }

func (e errDropped) Error() string { return e.err.Error() }
func (e errDropped) Unwrap() error { return e.err }

// retry runs op on a connection; when the connection drops it dials again
// and runs op once more, then gives up.
func (h *Host) retry(ctx context.Context, what string, op func(*ssh.Client) error) error {
	var last error
	for attempt := 0; attempt < 2; attempt++ {
		c, err := h.conn(ctx)
		if err != nil {
			var mm *HostKeyMismatchError
			if errors.As(err, &mm) || ctx.Err() != nil {
				return err
			}
			last = err
			continue
		}
		err = op(c)
		var d errDropped
		if !errors.As(err, &d) {
			return err
		}
		h.drop(c)
		last = d.err
		if ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("ssh %s: %s: connection failed twice (lost or refused), giving up: %w", h.Name(), what, last)
}

// Run runs argv and returns its standard output (infra.Runner).
func (h *Host) Run(ctx context.Context, argv ...string) ([]byte, error) {
	return infra.RunCommand(ctx, h, argv...)
}

// Exec runs a command on the host through its login shell, streaming
// output. When the connection drops the command is run once more on a new
// connection (its output so far is written again); a second drop fails.
// A Command marked Once is not run again once it started.
// A timeout or a cancelled context kills the remote command.
func (h *Host) Exec(ctx context.Context, c infra.Command) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("%s: %w", h.Name(), err)
	}
	line := commandLine(c)
	return h.retry(ctx, strings.Join(c.Argv, " "), func(cl *ssh.Client) error {
		return h.execOnce(ctx, cl, c, line)
	})
}

func (h *Host) execOnce(ctx context.Context, cl *ssh.Client, c infra.Command, line string) error {
	s, err := cl.NewSession()
	if err != nil {
		return errDropped{fmt.Errorf("open session: %w", err)}
	}
	defer s.Close()
	s.Stdin = c.Stdin
	pid := &pidLine{w: orDiscard(c.Stdout), got: make(chan struct{})}
	s.Stdout, s.Stderr = pid, orDiscard(c.Stderr)
	if err := s.Start(line); err != nil {
		return errDropped{fmt.Errorf("start %v: %w", c.Argv, err)}
	}
	done := make(chan error, 1)
	go func() { done <- s.Wait() }()
	var timeout <-chan time.Time
	if c.Timeout > 0 {
		t := time.NewTimer(c.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var ended error
	select {
	case err = <-done:
	case <-ctx.Done():
		ended = ctx.Err()
	case <-timeout:
		ended = fmt.Errorf("%v after %v: %w", c.Argv, c.Timeout, infra.ErrTimeout)
	}
	if ended != nil {
		// sshd starts each command in its own session, so the shell's PID
		// is the process group of the command and all it started. Kill
		// the group from a second session: OpenSSH ignores signal
		// requests, and closing a session without a terminal does not end
		// the command.
		if p := pid.get(); p > 0 {
			if ks, err := cl.NewSession(); err == nil {
				ks.Run(fmt.Sprintf("kill -KILL -- -%d", p))
				ks.Close()
			}
		}
		s.Signal(ssh.SIGKILL)
		s.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
		return fmt.Errorf("%s: %w", h.Name(), ended)
	}
	if err == nil {
		return nil
	}
	var ee *ssh.ExitError
	if errors.As(err, &ee) {
		code := ee.ExitStatus()
		if ee.Signal() != "" {
			code = -1
		}
		return &infra.ExitError{Host: h.Name(), Argv: c.Argv, Code: code}
	}
	// No exit status: the connection went away under the command.
	if c.Once {
		h.drop(cl)
		return fmt.Errorf("ssh %s: %v: connection lost while it ran (run once: not run again): %w", h.Name(), c.Argv, err)
	}
	return errDropped{fmt.Errorf("%v: %w", c.Argv, err)}
}

// commandLine quotes the command for the remote shell; exec keeps no shell
// between the command and the signals sent to it.
func commandLine(c infra.Command) string {
	var b strings.Builder
	// The first line of output is the shell's PID, for killing; pidLine
	// takes it off the stream.
	b.WriteString("echo $$; ")
	if c.Dir != "" {
		b.WriteString("cd " + quote(c.Dir) + " && ")
	}
	b.WriteString("exec")
	if len(c.Env) > 0 {
		b.WriteString(" env")
		for _, e := range c.Env {
			b.WriteString(" " + quote(e))
		}
	}
	for _, a := range c.Argv {
		b.WriteString(" " + quote(a))
	}
	return b.String()
}

func quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,@+%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// sftpDo runs op with an SFTP client on the connection, with the same
// retry-once rule as commands.
func (h *Host) sftpDo(ctx context.Context, what string, op func(*sftp.Client) error) error {
	return h.retry(ctx, what, func(cl *ssh.Client) error {
		sc, err := sftp.NewClient(cl)
		if err != nil {
			return errDropped{fmt.Errorf("start sftp: %w", err)}
		}
		defer sc.Close()
		stop := context.AfterFunc(ctx, func() { sc.Close() })
		defer stop()
		err = op(sc)
		if err != nil && ctx.Err() != nil {
			return fmt.Errorf("%s: %w", what, ctx.Err())
		}
		if err != nil && isConnErr(err) {
			return errDropped{err}
		}
		return err
	})
}

func isConnErr(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, sftp.ErrSSHFxConnectionLost) || errors.Is(err, sftp.ErrSSHFxNoConnection)
}

// Facts asks the host about itself.
func (h *Host) Facts(ctx context.Context) (infra.HostFacts, error) {
	f, err := infra.ProbeFacts(ctx, h)
	if err == nil {
		h.binMu.Lock()
		h.arch = f.Arch
		h.binMu.Unlock()
	}
	return f, err
}

// pidLine reads the PID the remote shell prints first, then passes the
// rest of standard output through.
type pidLine struct {
	w    io.Writer
	mu   sync.Mutex
	buf  []byte
	pid  int
	done bool
	got  chan struct{}
}

func (p *pidLine) Write(b []byte) (int, error) {
	p.mu.Lock()
	if p.done {
		p.mu.Unlock()
		return p.w.Write(b)
	}
	n := len(b)
	p.buf = append(p.buf, b...)
	i := bytes.IndexByte(p.buf, '\n')
	if i < 0 {
		p.mu.Unlock()
		return n, nil
	}
	p.pid, _ = strconv.Atoi(string(p.buf[:i]))
	rest := p.buf[i+1:]
	p.done = true
	p.buf = nil
	close(p.got)
	p.mu.Unlock()
	if len(rest) > 0 {
		if _, err := p.w.Write(rest); err != nil {
			return 0, err
		}
	}
	return n, nil
}

func (p *pidLine) get() int {
	select {
	case <-p.got:
	case <-time.After(2 * time.Second):
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pid
}
