package lab

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/valkey-io/valkey-go"
	"golang.org/x/sys/unix"
)

// Control is the control plane: PING, INFO, DBSIZE, FLUSHALL, CONFIG GET,
// through valkey-go. It never carries measured load.
type Control struct {
	c valkey.Client
}

// DialControl connects the control plane to the workload's server.
func DialControl(ctx context.Context, w Workload) (*Control, error) {
	return DialControlVia(ctx, w, nil)
}

// Dialer opens a connection; a network namespace or a tunnel provides one.
type Dialer func(ctx context.Context, network, addr string) (net.Conn, error)

// DialControlVia is DialControl through dial (nil: the host's own network),
// for a server that only another network namespace can reach.
func DialControlVia(ctx context.Context, w Workload, dial Dialer) (*Control, error) {
	opt := valkey.ClientOption{
		InitAddress:       []string{w.Addr()},
		Username:          w.User,
		Password:          w.Password,
		DisableCache:      true,
		ForceSingleClient: true,
		AlwaysRESP2:       true, // older servers and proxies speak RESP2 only
		Dialer:            net.Dialer{Timeout: 5 * time.Second},
		ClientName:        "linerate-control",
	}
	if dial != nil {
		opt.DialCtxFn = func(ctx context.Context, addr string, _ *net.Dialer, _ *tls.Config) (net.Conn, error) {
			return dial(ctx, "tcp", addr)
		}
	}
	c, err := valkey.NewClient(opt)
	if err != nil {
		return nil, fmt.Errorf("connect control plane to %s: %w", w.Addr(), err)
	}
	ctl := &Control{c: c}
	if err := c.Do(ctx, c.B().Ping().Build()).Error(); err != nil {
		c.Close()
		return nil, fmt.Errorf("PING %s: %w", w.Addr(), err)
	}
	return ctl, nil
}

func (c *Control) Close() { c.c.Close() }

// Info returns one INFO section as key/value pairs.
func (c *Control) Info(ctx context.Context, section string) (map[string]string, error) {
	s, err := c.c.Do(ctx, c.c.B().Info().Section(section).Build()).ToString()
	if err != nil {
		return nil, fmt.Errorf("INFO %s: %w", section, err)
	}
	return ParseInfo(s), nil
}

// ParseInfo reads INFO text into key/value pairs.
func ParseInfo(s string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = v
		}
	}
	return m
}

// ConfigGet returns the values of the named parameters the server knows.
func (c *Control) ConfigGet(ctx context.Context, params ...string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range params {
		m, err := c.c.Do(ctx, c.c.B().ConfigGet().Parameter(p).Build()).AsStrMap()
		if err != nil {
			return nil, fmt.Errorf("CONFIG GET %s: %w", p, err)
		}
		for k, v := range m {
			out[k] = v
		}
	}
	return out, nil
}

func (c *Control) DBSize(ctx context.Context) (int64, error) {
	n, err := c.c.Do(ctx, c.c.B().Dbsize().Build()).AsInt64()
	if err != nil {
		return 0, fmt.Errorf("DBSIZE: %w", err)
	}
	return n, nil
}

func (c *Control) FlushAll(ctx context.Context) error {
	if err := c.c.Do(ctx, c.c.B().Flushall().Build()).Error(); err != nil {
		return fmt.Errorf("FLUSHALL: %w", err)
	}
	return nil
}

// Set writes a whole value; tests use it to tamper with keys behind the
// engine's back.
func (c *Control) Set(ctx context.Context, key string, value []byte) error {
	return c.c.Do(ctx, c.c.B().Set().Key(key).Value(valkey.BinaryString(value)).Build()).Error()
}

// Get reads a whole value; the control plane uses it for spot checks only.
func (c *Control) Get(ctx context.Context, key string) ([]byte, error) {
	return c.c.Do(ctx, c.c.B().Get().Key(key).Build()).AsBytes()
}

// Do runs an arbitrary command, for tests and diagnostics.
func (c *Control) Do(ctx context.Context, args ...string) (string, error) {
	return c.c.Do(ctx, c.c.B().Arbitrary(args...).Build()).ToString()
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
	for _, k := range configKeys {
		m, err := c.ConfigGet(ctx, k)
		if err != nil {
			continue // a proxy or an old version may refuse one key
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
	parts := []string{"AUTH"}
	if w.User != "" {
		parts = append(parts, w.User)
	}
	parts = append(parts, w.Password)
	var b []byte
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(parts)), 10)
	b = append(b, "\r\n"...)
	for _, p := range parts {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(p)), 10)
		b = append(b, "\r\n"...)
		b = append(b, p...)
		b = append(b, "\r\n"...)
	}
	return b
}

// authRaw authenticates a fresh data connection before it joins an epoll
// loop. It runs once per connection, off the hot path.
func authRaw(fd int, cmd []byte) error {
	if err := unix.SetNonblock(fd, false); err != nil {
		return err
	}
	defer unix.SetNonblock(fd, true)
	tv := unix.NsecToTimeval(int64(5 * time.Second))
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
	line, err := bufio.NewReaderSize(fdReader(fd), 512).ReadString('\n')
	if err != nil {
		return fmt.Errorf("read AUTH reply: %w", err)
	}
	if !strings.HasPrefix(line, "+OK") {
		return fmt.Errorf("AUTH refused: %s", strings.TrimSpace(line))
	}
	return nil
}

// fdReader reads one byte at a time so nothing past the AUTH reply is
// taken off the socket.
type fdReader int

func (f fdReader) Read(p []byte) (int, error) {
	n, err := unix.Read(int(f), p[:1])
	if n == 0 && err == nil {
		return 0, fmt.Errorf("connection closed")
	}
	return n, err
}
