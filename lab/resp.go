package lab

import (
	"bytes"
	"errors"
	"strconv"
)

// The raw engine speaks just enough RESP for GET and SET: it builds request
// headers into fixed buffers and parses one reply header line at a time.
// Payloads never pass through here.

// replyKind is the first byte of a RESP reply.
type replyKind byte

const (
	replyBulk   replyKind = '$'
	replySimple replyKind = '+'
	replyError  replyKind = '-'
	replyInt    replyKind = ':'
	replyNull   replyKind = '_' // RESP3 null; RESP2 nil is $-1
)

// maxReplyLine bounds a header line: an error text longer than this is a
// protocol fault, not something to buffer without limit.
const maxReplyLine = 4096

var (
	errNeedMore      = errors.New("need more bytes")
	errBadReply      = errors.New("malformed reply")
	errLineTooLong   = errors.New("reply line longer than 4096 bytes")
	errUnexpectedTyp = errors.New("unexpected reply type")
)

// replyHeader is a parsed reply line.
type replyHeader struct {
	kind replyKind
	n    int64  // bulk length (-1 for nil) or integer value
	line []byte // text of simple and error replies (aliases the input)
	used int    // bytes of the input the line took, CRLF included
}

// parseReplyHeader reads one reply line from p. It returns errNeedMore when p
// holds no complete line yet.
func parseReplyHeader(p []byte) (replyHeader, error) {
	if len(p) == 0 {
		return replyHeader{}, errNeedMore
	}
	end := bytes.IndexByte(p, '\n')
	if end < 0 {
		if len(p) >= maxReplyLine {
			return replyHeader{}, errLineTooLong
		}
		return replyHeader{}, errNeedMore
	}
	if end < 1 || p[end-1] != '\r' {
		return replyHeader{}, errBadReply
	}
	h := replyHeader{kind: replyKind(p[0]), used: end + 1}
	body := p[1 : end-1]
	switch h.kind {
	case replyBulk, replyInt:
		n, ok := parseInt(body)
		if !ok || (h.kind == replyBulk && n < -1) {
			return replyHeader{}, errBadReply
		}
		h.n = n
	case replySimple, replyError:
		h.line = body
	case replyNull:
		if len(body) != 0 {
			return replyHeader{}, errBadReply
		}
		h.n = -1
	default:
		return replyHeader{}, errUnexpectedTyp
	}
	return h, nil
}

// parseInt reads a signed decimal without allocating; it refuses lengths
// that would overflow rather than wrap.
func parseInt(b []byte) (int64, bool) {
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
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// appendGet appends "GET key" as a RESP array.
func appendGet(dst []byte, keyID uint32, keySize int) []byte {
	dst = append(dst, "*2\r\n$3\r\nGET\r\n$"...)
	dst = strconv.AppendInt(dst, int64(keySize), 10)
	dst = append(dst, "\r\n"...)
	dst = AppendKey(dst, keyID, keySize)
	return append(dst, "\r\n"...)
}

// appendSetHeader appends "SET key" and the value's bulk header; the value
// and its closing CRLF are sent separately.
func appendSetHeader(dst []byte, keyID uint32, keySize int, valueLen int64) []byte {
	dst = append(dst, "*3\r\n$3\r\nSET\r\n$"...)
	dst = strconv.AppendInt(dst, int64(keySize), 10)
	dst = append(dst, "\r\n"...)
	dst = AppendKey(dst, keyID, keySize)
	dst = append(dst, "\r\n$"...)
	dst = strconv.AppendInt(dst, valueLen, 10)
	return append(dst, "\r\n"...)
}
