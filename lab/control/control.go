// Package control is the control plane of a bench run: PING, INFO, CONFIG
// GET, DBSIZE, FLUSHALL on a connection of its own, read with lab/resp's
// bounded reader. It never carries measured load.
package control

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/resp"
)

// Conn is the control plane: PING, INFO, DBSIZE, FLUSHALL, CONFIG GET.
// It never carries measured load. Replies are read by resp.Conn within
// bounds: a server that answers with nonsense gives an error naming it.
type Conn struct {
	c *resp.Conn
}

// Dial connects the control plane to the workload's server.
func Dial(ctx context.Context, w lab.Workload) (*Conn, error) {
	return DialVia(ctx, w, nil)
}

// Dialer opens a connection; a network namespace or a tunnel provides one.
type Dialer = resp.Dialer

// DialVia is Dial through dial (nil: the host's own network),
// for a server that only another network namespace can reach.
func DialVia(ctx context.Context, w lab.Workload, dial Dialer) (*Conn, error) {
	return DialWith(ctx, w, Options{Dial: dial})
}

// Options say how the control plane reaches a server beyond the
// workload's address and credentials.
type Options struct {
	// Dial opens the connection (nil: this host's network).
	Dial Dialer
	// TLS speaks TLS to a TLS-only server (--port 0 --tls-port), trusting
	// what the configuration trusts (the run's CA); nil: plain TCP.
	TLS *tls.Config
}

// DialWith connects the control plane with opt: PING, INFO facts,
// FLUSHALL and the rest of a TLS-only server go over its TLS port.
func DialWith(ctx context.Context, w lab.Workload, opt Options) (*Conn, error) {
	c, err := resp.Dial(ctx, w.Addr(), resp.Options{Dial: opt.Dial, TLS: opt.TLS, User: w.User, Password: w.Password})
	if err != nil {
		return nil, fmt.Errorf("control plane: %w", err)
	}
	ctl := &Conn{c: c}
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

func (c *Conn) Close() { c.c.Close() }

// Info returns one INFO section as key/value pairs.
func (c *Conn) Info(ctx context.Context, section string) (map[string]string, error) {
	s, err := c.c.Text(ctx, "INFO", section)
	if err != nil {
		return nil, err
	}
	return resp.ParseInfo(s), nil
}

// ConfigGet returns the values of the named parameters the server knows,
// one parameter per call: multi-parameter CONFIG GET is Redis 7+ only.
func (c *Conn) ConfigGet(ctx context.Context, params ...string) (map[string]string, error) {
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

func (c *Conn) DBSize(ctx context.Context) (int64, error) {
	return c.c.Integer(ctx, "DBSIZE")
}

// flushTimeout bounds FLUSHALL when the caller gives no deadline: freeing
// tens of gigabytes takes a while on versions that free synchronously.
const flushTimeout = 2 * time.Minute

func (c *Conn) FlushAll(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, flushTimeout)
		defer cancel()
	}
	_, err := c.c.Text(ctx, "FLUSHALL")
	return err
}

// SampleKeys is up to n keys of the current database, as SCAN gives them
// (deterministic for a given keyspace, no key twice).
func (c *Conn) SampleKeys(ctx context.Context, n int) ([]string, error) {
	var keys []string
	seen := map[string]bool{}
	cursor := "0"
	for len(keys) < n {
		v, err := c.c.Do(ctx, "SCAN", cursor, "COUNT", strconv.Itoa(n))
		if err != nil {
			return nil, err
		}
		if v.Kind != resp.Array || len(v.Elems) != 2 || v.Elems[1].Kind != resp.Array {
			return nil, fmt.Errorf("SCAN on %s: %w: not a cursor and a list of keys", c.c.Addr, resp.ErrUnexpectedType)
		}
		for _, k := range v.Elems[1].Elems {
			if len(keys) < n && !seen[k.Str] {
				seen[k.Str] = true
				keys = append(keys, k.Str)
			}
		}
		if cursor = v.Elems[0].Str; cursor == "0" {
			break
		}
	}
	return keys, nil
}

// MemoryUsage is MEMORY USAGE key SAMPLES 0: the bytes the server counts
// for the key and its value, every element of it.
func (c *Conn) MemoryUsage(ctx context.Context, key string) (int64, error) {
	return c.c.Integer(ctx, "MEMORY", "USAGE", key, "SAMPLES", "0")
}

// BGSave starts an RDB snapshot in the background (BGSAVE SCHEDULE: one
// that an AOF rewrite under way holds back starts after it). A snapshot
// already running is not an error: it is the one asked for.
func (c *Conn) BGSave(ctx context.Context) error {
	_, err := c.c.Text(ctx, "BGSAVE", "SCHEDULE")
	var se *resp.ServerError
	if errors.As(err, &se) && strings.Contains(strings.ToLower(se.Msg), "already in progress") {
		return nil
	}
	return err
}

// Set writes a whole value; tests use it to tamper with keys behind the
// engine's back.
func (c *Conn) Set(ctx context.Context, key string, value []byte) error {
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
func (c *Conn) ServerInfo(ctx context.Context) (*lab.ServerInfo, error) {
	si := &lab.ServerInfo{Info: map[string]string{}, Config: map[string]string{}}
	for _, sec := range []string{"server", "memory"} {
		m, err := c.Info(ctx, sec)
		if err != nil {
			return nil, err
		}
		if sec == "server" {
			// The one detector, as the launchers name a server.
			si.Name, si.Version = resp.ServerKind(m)
		}
		for _, k := range infoKeys {
			if v, ok := m[k]; ok {
				si.Info[k] = v
			}
		}
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
