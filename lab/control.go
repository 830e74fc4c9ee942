package lab

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/lab/resp"
)

// Control is the control plane: PING, INFO, DBSIZE, FLUSHALL, CONFIG GET.
// It never carries measured load. Replies are read by resp.Conn within
// bounds: a server that answers with nonsense gives an error naming it.
type Control struct {
	c *resp.Conn
}

// DialControl connects the control plane to the workload's server.
func DialControl(ctx context.Context, w Workload) (*Control, error) {
	return DialControlVia(ctx, w, nil)
}

// Dialer opens a connection; a network namespace or a tunnel provides one.
type Dialer = resp.Dialer

// DialControlVia is DialControl through dial (nil: the host's own network),
// for a server that only another network namespace can reach.
func DialControlVia(ctx context.Context, w Workload, dial Dialer) (*Control, error) {
	c, err := resp.Dial(ctx, w.Addr(), resp.Options{Dial: dial, User: w.User, Password: w.Password})
	if err != nil {
		return nil, fmt.Errorf("control plane: %w", err)
	}
	ctl := &Control{c: c}
	// The name shows the control connection in CLIENT LIST; a proxy may
	// refuse the command, which is no fault.
	var se *resp.ServerError
	if _, err := c.Do(ctx, "CLIENT", "SETNAME", "linerate-control"); err != nil && !errors.As(err, &se) {
		c.Close()
		return nil, err
	}
	if _, err := c.Text(ctx, "PING"); err != nil {
		c.Close()
		return nil, err
	}
	return ctl, nil
}

func (c *Control) Close() { c.c.Close() }

// Info returns one INFO section as key/value pairs.
func (c *Control) Info(ctx context.Context, section string) (map[string]string, error) {
	s, err := c.c.Text(ctx, "INFO", section)
	if err != nil {
		return nil, err
	}
	return resp.ParseInfo(s), nil
}

// ConfigGet returns the values of the named parameters the server knows,
// one parameter per call: multi-parameter CONFIG GET is Redis 7+ only.
func (c *Control) ConfigGet(ctx context.Context, params ...string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range params {
		m, err := c.c.Pairs(ctx, "CONFIG", "GET", p)
		if err != nil {
			return nil, err
		}
		for k, v := range m {
			out[k] = v
		}
	}
	return out, nil
}

func (c *Control) DBSize(ctx context.Context) (int64, error) {
	return c.c.Integer(ctx, "DBSIZE")
}

// flushTimeout bounds FLUSHALL when the caller gives no deadline: freeing
// tens of gigabytes takes a while on versions that free synchronously.
const flushTimeout = 2 * time.Minute

func (c *Control) FlushAll(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, flushTimeout)
		defer cancel()
	}
	_, err := c.c.Text(ctx, "FLUSHALL")
	return err
}

// Set writes a whole value; tests use it to tamper with keys behind the
// engine's back.
func (c *Control) Set(ctx context.Context, key string, value []byte) error {
	_, err := c.c.Text(ctx, "SET", key, string(value))
	return err
}

// infoKeys are the INFO fields every record keeps.
var infoKeys = []string{
	"redis_version", "valkey_version", "server_name", "redis_mode", "os", "arch_bits",
	"multiplexing_api", "gcc_version", "process_id", "executable", "io_threads_active",
	"mem_allocator", "used_memory", "maxmemory", "maxmemory_policy",
}

// configKeys shape a large-value load; absent ones (older versions) are
// simply not recorded.
var configKeys = []string{"io-threads", "io-threads-do-reads", "maxmemory", "proto-max-bulk-len", "save", "appendonly", "client-output-buffer-limit"}

// ServerInfo gathers what a record keeps about the server.
func (c *Control) ServerInfo(ctx context.Context) (*ServerInfo, error) {
	si := &ServerInfo{Info: map[string]string{}, Config: map[string]string{}}
	for _, sec := range []string{"server", "memory"} {
		m, err := c.Info(ctx, sec)
		if err != nil {
			return nil, err
		}
		for _, k := range infoKeys {
			if v, ok := m[k]; ok {
				si.Info[k] = v
			}
		}
	}
	si.Name, si.Version = "redis", si.Info["redis_version"]
	if v, ok := si.Info["valkey_version"]; ok {
		si.Name, si.Version = "valkey", v
	} else if n := si.Info["server_name"]; n == "valkey" || n == SinkName {
		si.Name = n
	}
	var se *resp.ServerError
	for _, k := range configKeys {
		m, err := c.ConfigGet(ctx, k)
		if errors.As(err, &se) {
			continue // a proxy or an old version may refuse one key
		}
		if err != nil {
			return nil, err
		}
		for kk, v := range m {
			si.Config[kk] = v
		}
	}
	return si, nil
}

// authCommand is the AUTH the raw engine sends on each data connection.
func authCommand(w Workload) []byte {
	if w.Password == "" {
		return nil
	}
	if w.User != "" {
		return resp.AppendCommand(nil, "AUTH", w.User, w.Password)
	}
	return resp.AppendCommand(nil, "AUTH", w.Password)
}

// authRaw authenticates a fresh data connection before it joins an epoll
// loop. It runs once per connection, off the hot path.
func authRaw(fd int, cmd []byte) error {
	if err := unix.SetNonblock(fd, false); err != nil {
		return err
	}
	defer unix.SetNonblock(fd, true)
	tv := unix.NsecToTimeval(int64(authTimeout))
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	defer func() {
		zero := unix.Timeval{}
		_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &zero)
	}()
	for off := 0; off < len(cmd); {
		n, err := unix.Write(fd, cmd[off:])
		if err != nil {
			return fmt.Errorf("send AUTH: %w", err)
		}
		off += n
	}
	// One reply line, bounded in length and in time: a peer that drips
	// bytes or never ends the line is refused, not waited on.
	r := bufio.NewReaderSize(&fdReader{fd: fd, deadline: time.Now().Add(authTimeout)}, resp.MaxLine+2)
	line, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		err = resp.ErrLineTooLong
	}
	if err != nil {
		return fmt.Errorf("read AUTH reply: %w", err)
	}
	h, err := resp.ParseHeader(line)
	switch {
	case err != nil:
		return fmt.Errorf("read AUTH reply: %w", err)
	case h.Kind == resp.Error:
		return fmt.Errorf("AUTH refused: %s", resp.Printable(h.Line))
	case h.Kind != resp.Simple || string(h.Line) != "OK":
		return fmt.Errorf("read AUTH reply: %w %c", resp.ErrUnexpectedType, h.Kind)
	}
	return nil
}

// authTimeout bounds the whole AUTH exchange of a data connection.
const authTimeout = 5 * time.Second

// fdReader reads one byte at a time so nothing past the AUTH reply is
// taken off the socket, and gives up at its deadline.
type fdReader struct {
	fd       int
	deadline time.Time
}

func (f *fdReader) Read(p []byte) (int, error) {
	if time.Now().After(f.deadline) {
		return 0, fmt.Errorf("no whole reply within %s", authTimeout)
	}
	n, err := unix.Read(f.fd, p[:1])
	if n == 0 && err == nil {
		return 0, fmt.Errorf("connection closed")
	}
	return n, err
}
