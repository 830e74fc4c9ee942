// Package resp speaks just enough RESP, always within bounds: the raw
// engine's reply headers (parsed out of its own buffers, payloads never
// pass here) and the control plane's whole replies (Conn: PING, AUTH,
// INFO, CONFIG GET, DBSIZE, FLUSHALL, SHUTDOWN). A peer is untrusted:
// whatever it sends ends in an error, never in a panic, a hang past the
// deadline or an allocation the peer sized.
package resp

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Kind is the first byte of a RESP reply.
type Kind byte

const (
	Bulk   Kind = '$'
	Simple Kind = '+'
	Error  Kind = '-'
	Int    Kind = ':'
	Array  Kind = '*'
	Null   Kind = '_' // RESP3 null; RESP2 nil is $-1 or *-1
)

// MaxLine bounds a reply line: an error text longer than this is a
// protocol fault, not something to buffer without limit.
const MaxLine = 4096

// ErrMalformed is what every reply fault wraps: the peer does not speak
// RESP as a server does.
var ErrMalformed = errors.New("malformed reply")

var (
	// ErrNeedMore says the input holds no complete line yet. It is
	// returned unwrapped, so the engine's hot path may compare with ==.
	ErrNeedMore       = errors.New("need more bytes")
	ErrLineTooLong    = fmt.Errorf("%w: line longer than %d bytes", ErrMalformed, MaxLine)
	ErrUnexpectedType = fmt.Errorf("%w: unexpected type", ErrMalformed)
)

// Header is a parsed reply line.
type Header struct {
	Kind Kind
	N    int64  // bulk or array length (-1 for nil), or the integer
	Line []byte // text of simple and error replies (aliases the input)
	Used int    // bytes of the input the line took, CRLF included
}

// ParseHeader reads one reply line from p. It returns ErrNeedMore when p
// holds no complete line yet.
func ParseHeader(p []byte) (Header, error) {
	if len(p) == 0 {
		return Header{}, ErrNeedMore
	}
	end := bytes.IndexByte(p, '\n')
	if end < 0 {
		if len(p) >= MaxLine {
			return Header{}, ErrLineTooLong
		}
		return Header{}, ErrNeedMore
	}
	if end < 1 || p[end-1] != '\r' {
		return Header{}, fmt.Errorf("%w: line not ended by CRLF", ErrMalformed)
	}
	h := Header{Kind: Kind(p[0]), Used: end + 1}
	body := p[1 : end-1]
	switch h.Kind {
	case Bulk, Array, Int:
		n, ok := ParseInt(body)
		if !ok || (h.Kind != Int && n < -1) {
			return Header{}, fmt.Errorf("%w: %s", ErrMalformed, quoted(p[:end-1]))
		}
		h.N = n
	case Simple, Error:
		h.Line = body
	case Null:
		if len(body) != 0 {
			return Header{}, fmt.Errorf("%w: null with a body", ErrMalformed)
		}
		h.N = -1
	default:
		return Header{}, fmt.Errorf("%w %s", ErrUnexpectedType, quoted(p[:1]))
	}
	return h, nil
}

// ParseInt reads a signed decimal without allocating; it refuses lengths
// that would overflow rather than wrap.
func ParseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	neg := false
	if b[0] == '-' {
		neg, b = true, b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	if neg {
		n = -n
	}
	return n, true
}

// quoted shows up to 40 bytes of what a peer sent, escaped, so an error
// stays one printable line.
func quoted(b []byte) string {
	if len(b) > 40 {
		return strconv.Quote(string(b[:40])) + "…"
	}
	return strconv.Quote(string(b))
}

// AppendCommand appends args as a RESP array of bulk strings.
func AppendCommand(dst []byte, args ...string) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(len(args)), 10)
	dst = append(dst, "\r\n"...)
	for _, a := range args {
		dst = append(dst, '$')
		dst = strconv.AppendInt(dst, int64(len(a)), 10)
		dst = append(dst, "\r\n"...)
		dst = append(dst, a...)
		dst = append(dst, "\r\n"...)
	}
	return dst
}
