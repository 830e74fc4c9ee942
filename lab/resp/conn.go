package resp

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// ErrTooLarge says a reply announced more than the reader holds for one
// reply; it is a fault of the peer like any malformed reply.
var ErrTooLarge = fmt.Errorf("%w: too large", ErrMalformed)

// Limits bound what one reply may make a Conn hold and how long a call
// may wait. Zero fields take the defaults.
type Limits struct {
	// MaxReply bounds the bytes of one reply, all its parts (default
	// 4 MiB: INFO and CONFIG GET answers are kilobytes).
	MaxReply int64
	// MaxElems bounds the elements of all arrays in one reply (default
	// 4096; CONFIG GET * is a few hundred).
	MaxElems int
	// MaxDepth bounds array nesting (default 4).
	MaxDepth int
	// Timeout bounds a call whose context has no deadline (default 30 s).
	Timeout time.Duration
}

func (l Limits) withDefaults() Limits {
	if l.MaxReply <= 0 {
		l.MaxReply = 4 << 20
	}
	if l.MaxElems <= 0 {
		l.MaxElems = 4096
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = 4
	}
	if l.Timeout <= 0 {
		l.Timeout = 30 * time.Second
	}
	return l
}

// Dialer opens a connection; a network namespace or a tunnel provides one.
type Dialer func(ctx context.Context, network, addr string) (net.Conn, error)

// Options say how to reach and authenticate to a server.
type Options struct {
	Dial           Dialer        // nil: this host's network
	DialTimeout    time.Duration // default 5 s (the TLS handshake included)
	User, Password string        // AUTH [user] password when Password is set
	// TLS, when set, speaks TLS over the connection (a server started with
	// --port 0 --tls-port): the handshake is part of Dial, and a
	// certificate the configuration does not trust fails it.
	TLS    *tls.Config
	Limits Limits
}

// Conn is one control-plane connection: one command at a time, each reply
// read whole within its Limits and the call's deadline. After a fault of
// the stream (a malformed reply, a timeout, a reset) it is unusable.
type Conn struct {
	Addr   string
	lim    Limits
	nc     net.Conn
	r      *bufio.Reader
	out    []byte
	broken error
}

// Dial connects to addr and authenticates.
func Dial(ctx context.Context, addr string, opt Options) (*Conn, error) {
	timeout := opt.DialTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dial := opt.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	nc, err := dial(dctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	if opt.TLS != nil {
		tc := tls.Client(nc, opt.TLS)
		if err := tc.HandshakeContext(dctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
		}
		nc = tc
	}
	c := &Conn{Addr: addr, lim: opt.Limits.withDefaults(), nc: nc, r: bufio.NewReaderSize(nc, MaxLine+2)}
	if opt.Password != "" {
		args := []string{"AUTH", opt.Password}
		if opt.User != "" {
			args = []string{"AUTH", opt.User, opt.Password}
		}
		if _, err := c.Do(ctx, args...); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// ServerError is an error reply (-ERR, -NOAUTH, -LOADING …): the stream
// is in step and the connection stays usable.
type ServerError struct{ Msg string }

func (e *ServerError) Error() string { return e.Msg }

// Value is one reply.
type Value struct {
	Kind  Kind
	Str   string // simple, error and bulk replies
	Int   int64
	Nil   bool // $-1, *-1, _
	Elems []Value
}

// Do sends one command and reads its reply whole. An error reply is a
// *ServerError; every error names the command and the server.
func (c *Conn) Do(ctx context.Context, args ...string) (Value, error) {
	if c.broken != nil {
		return Value{}, c.named(args, fmt.Errorf("connection unusable after an earlier fault: %w", c.broken))
	}
	deadline, fromCtx := ctx.Deadline()
	if !fromCtx {
		deadline = time.Now().Add(c.lim.Timeout)
	}
	_ = c.nc.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	c.out = AppendCommand(c.out[:0], args...)
	if cap(c.out) > 64<<10 {
		defer func() { c.out = nil }() // keep no large SET around
	}
	v, err := c.roundTrip()
	if err != nil {
		var ne net.Error
		switch {
		case ctx.Err() != nil:
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		case errors.As(err, &ne) && ne.Timeout() && fromCtx:
			err = fmt.Errorf("%w (%v)", context.DeadlineExceeded, err)
		case errors.As(err, &ne) && ne.Timeout():
			err = fmt.Errorf("no whole reply within %s: %w", c.lim.Timeout, err)
		}
		c.broken = err
		return Value{}, c.named(args, err)
	}
	if v.Kind == Error {
		return v, c.named(args, &ServerError{Msg: v.Str})
	}
	return v, nil
}

func (c *Conn) roundTrip() (Value, error) {
	if _, err := c.nc.Write(c.out); err != nil {
		return Value{}, err
	}
	rd := replyReader{r: c.r, lim: c.lim, budget: c.lim.MaxReply}
	return rd.value(0)
}

// named wraps err with the command and the server. AUTH's arguments are
// secret and stay out.
func (c *Conn) named(args []string, err error) error {
	label := "command"
	if len(args) > 0 {
		label = strings.ToUpper(args[0])
		if len(args) > 1 && label != "AUTH" && len(args[1]) <= 40 {
			label += " " + args[1]
		}
	}
	return fmt.Errorf("%s on %s: %w", label, c.Addr, err)
}

// Text sends a command whose reply is a string (simple or bulk).
func (c *Conn) Text(ctx context.Context, args ...string) (string, error) {
	v, err := c.Do(ctx, args...)
	if err != nil {
		return "", err
	}
	if (v.Kind != Simple && v.Kind != Bulk) || v.Nil {
		return "", c.named(args, fmt.Errorf("%w %c where text belongs", ErrUnexpectedType, v.Kind))
	}
	return v.Str, nil
}

// Integer sends a command whose reply is an integer.
func (c *Conn) Integer(ctx context.Context, args ...string) (int64, error) {
	v, err := c.Do(ctx, args...)
	if err != nil {
		return 0, err
	}
	if v.Kind != Int {
		return 0, c.named(args, fmt.Errorf("%w %c where an integer belongs", ErrUnexpectedType, v.Kind))
	}
	return v.Int, nil
}

// Pairs sends a command whose reply is a flat array of name, value pairs
// (CONFIG GET in RESP2).
func (c *Conn) Pairs(ctx context.Context, args ...string) (map[string]string, error) {
	v, err := c.Do(ctx, args...)
	if err != nil {
		return nil, err
	}
	if v.Kind != Array || len(v.Elems)%2 != 0 {
		return nil, c.named(args, fmt.Errorf("%w: %c of %d elements where name, value pairs belong", ErrUnexpectedType, v.Kind, len(v.Elems)))
	}
	m := make(map[string]string, len(v.Elems)/2)
	for i := 0; i < len(v.Elems); i += 2 {
		k, x := v.Elems[i], v.Elems[i+1]
		if k.Kind != Bulk || x.Kind != Bulk || k.Nil {
			return nil, c.named(args, fmt.Errorf("%w: pair of %c and %c", ErrUnexpectedType, k.Kind, x.Kind))
		}
		m[k.Str] = x.Str
	}
	return m, nil
}

// replyReader reads one reply, charging every byte and element it keeps
// to the reply's budget before it allocates for it.
type replyReader struct {
	r      *bufio.Reader
	lim    Limits
	budget int64
	elems  int
}

func (rd *replyReader) value(depth int) (Value, error) {
	line, err := rd.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return Value{}, ErrLineTooLong
	}
	if err != nil {
		return Value{}, readErr(err)
	}
	if rd.budget -= int64(len(line)); rd.budget < 0 {
		return Value{}, fmt.Errorf("%w: over %d bytes", ErrTooLarge, rd.lim.MaxReply)
	}
	h, err := ParseHeader(line)
	if err != nil {
		return Value{}, err
	}
	v := Value{Kind: h.Kind}
	switch h.Kind {
	case Simple, Error:
		v.Str = Printable(h.Line)
	case Int:
		v.Int = h.N
	case Null:
		v.Nil = true
	case Bulk:
		if h.N < 0 {
			v.Nil = true
			break
		}
		if h.N > rd.budget-2 {
			return Value{}, fmt.Errorf("%w: a %d-byte bulk string, over the %d bytes one reply may hold", ErrTooLarge, h.N, rd.lim.MaxReply)
		}
		rd.budget -= h.N + 2
		b := make([]byte, h.N+2)
		if _, err := io.ReadFull(rd.r, b); err != nil {
			return Value{}, readErr(err)
		}
		if b[h.N] != '\r' || b[h.N+1] != '\n' {
			return Value{}, fmt.Errorf("%w: bulk string not closed by CRLF", ErrMalformed)
		}
		v.Str = string(b[:h.N])
	case Array:
		if h.N < 0 {
			v.Nil = true
			break
		}
		if depth >= rd.lim.MaxDepth {
			return Value{}, fmt.Errorf("%w: arrays nested deeper than %d", ErrTooLarge, rd.lim.MaxDepth)
		}
		if h.N > int64(rd.lim.MaxElems-rd.elems) {
			return Value{}, fmt.Errorf("%w: an array of %d elements, over the %d one reply may hold", ErrTooLarge, h.N, rd.lim.MaxElems)
		}
		rd.elems += int(h.N)
		v.Elems = make([]Value, h.N)
		for i := range v.Elems {
			if v.Elems[i], err = rd.value(depth + 1); err != nil {
				return Value{}, err
			}
		}
	}
	return v, nil
}

// readErr says that a reply ended early, rather than a bare EOF.
func readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("connection closed mid-reply: %w", io.ErrUnexpectedEOF)
	}
	return err
}

// Printable keeps a peer's text to one printable line.
func Printable(b []byte) string {
	s := string(b)
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}
