package engine

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/lab/internal/rawsock"
)

// TLS 1.3 records without crypto/tls on the data path. crypto/tls runs the
// handshake; once it is done, a session with an AES-GCM suite reads and
// writes its application records here: the socket read into one buffer,
// each record opened in place, requests sealed in place into another.
// crypto/tls's own reads allocate a small reader each time they touch the
// socket (about one per 16 KiB record), and fresh heap pages fault in:
// 0.25-0.55 minor faults per request at 1 MiB, nearly 3 at 8 MiB. This
// path allocates nothing per request.
//
// The traffic secrets come from crypto/tls's KeyLogWriter (the only way
// it gives them out), the keys and IVs from them as RFC 8446 7.3 derives
// them. The switch is made at the end of the handshake: the client's
// Finished went under the handshake keys, so both directions' application
// sequence numbers are still zero, and crypto/tls holds no application
// record of the server's -- provided the server sent none before the
// client's Finished. The one a server may send that early is a session
// ticket (RFC 8446 4.6.1 lets it follow the server's own Finished); the
// client asks for no resumption (handshakeTLS), so Go's servers send
// none, and OpenSSL's (valkey's, redis's) send theirs after reading the
// client's Finished. Were one buffered all the same, the first record read
// here would fail authentication: an error, never wrong bytes. Tickets
// read here are dropped; a KeyUpdate is refused (no server here sends
// one). Under TLS 1.2 or ChaCha20 the session stays on crypto/tls.

// tlsRecordMax is the most ciphertext one TLS 1.3 record carries: 2^14
// bytes of plaintext, the content type and padding allowance, the tag.
const tlsRecordMax = 1<<14 + 256

// tlsInBuf is how much ciphertext one read takes from the socket.
const tlsInBuf = 256 << 10

// Record content types.
const (
	recAlert     = 21
	recHandshake = 22
	recAppData   = 23
)

// recordLayer is a session's application records after the handshake.
type recordLayer struct {
	fd     int
	rd, wr recordKeys
	in     []byte // ciphertext read: in[inLo:inHi] not yet opened
	inLo   int
	inHi   int
	plain  []byte // the opened record being read out (inside in)
	out    []byte // sealed, not yet taken by the socket
	outOff int
}

// recordKeys is one direction's AEAD and sequence number.
type recordKeys struct {
	aead  cipher.AEAD
	iv    [12]byte
	nonce [12]byte
	seq   uint64
}

// keyLog keeps the two application traffic secrets of one handshake.
type keyLog struct{ client, server []byte }

func (k *keyLog) Write(line []byte) (int, error) {
	f := bytes.Fields(line)
	if len(f) == 3 {
		secret, err := hex.DecodeString(string(f[2]))
		if err == nil {
			switch string(f[0]) {
			case "CLIENT_TRAFFIC_SECRET_0":
				k.client = secret
			case "SERVER_TRAFFIC_SECRET_0":
				k.server = secret
			}
		}
	}
	return len(line), nil
}

// newRecordLayer takes over a finished handshake's records, or returns
// nil when the session is not one this layer speaks.
func newRecordLayer(fd int, st tls.ConnectionState, k *keyLog) (*recordLayer, error) {
	var h func() hash.Hash
	var keyLen int
	switch st.CipherSuite {
	case tls.TLS_AES_128_GCM_SHA256:
		h, keyLen = sha256.New, 16
	case tls.TLS_AES_256_GCM_SHA384:
		h, keyLen = sha512.New384, 32
	default:
		return nil, nil
	}
	if st.Version != tls.VersionTLS13 || k.client == nil || k.server == nil {
		return nil, nil
	}
	l := &recordLayer{fd: fd, in: make([]byte, tlsInBuf), out: make([]byte, 0, tlsChunk+tlsChunk/8)}
	if err := l.wr.init(h, k.client, keyLen); err != nil {
		return nil, err
	}
	if err := l.rd.init(h, k.server, keyLen); err != nil {
		return nil, err
	}
	for i := range l.in { // fault the pages in now
		l.in[i] = 0
	}
	return l, nil
}

// init derives a direction's key and IV from its traffic secret.
func (r *recordKeys) init(h func() hash.Hash, secret []byte, keyLen int) error {
	key, err := hkdf.Expand(h, secret, expandLabel("key", keyLen), keyLen)
	if err != nil {
		return fmt.Errorf("tls key: %w", err)
	}
	iv, err := hkdf.Expand(h, secret, expandLabel("iv", 12), 12)
	if err != nil {
		return fmt.Errorf("tls iv: %w", err)
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return fmt.Errorf("tls cipher: %w", err)
	}
	if r.aead, err = cipher.NewGCM(b); err != nil {
		return fmt.Errorf("tls gcm: %w", err)
	}
	copy(r.iv[:], iv)
	return nil
}

// expandLabel is HKDF-Expand-Label's info: length, "tls13 "+label, an
// empty context.
func expandLabel(label string, length int) string {
	l := "tls13 " + label
	b := []byte{byte(length >> 8), byte(length), byte(len(l))}
	b = append(b, l...)
	return string(append(b, 0))
}

// nextNonce is the IV XOR the sequence number, which then advances.
func (r *recordKeys) nextNonce() []byte {
	r.nonce = r.iv
	for i := 0; i < 8; i++ {
		r.nonce[4+i] ^= byte(r.seq >> (56 - 8*i))
	}
	r.seq++
	return r.nonce[:]
}

var (
	errRecordAuth   = errors.New("tls: a record failed authentication")
	errRecordType   = errors.New("tls: an unexpected record type")
	errRecordUpdate = errors.New("tls: the server sent a KeyUpdate, which this engine does not follow")
	errRecordAlert  = errors.New("tls: the server sent an alert")
)

// Read reads plaintext into p as rawsock.Read: EAGAIN when no whole
// record is there, (0, nil) when the server closed.
func (l *recordLayer) Read(p []byte) (int, error) {
	for len(l.plain) == 0 {
		if err := l.next(); err != nil {
			return 0, err
		}
	}
	n := copy(p, l.plain)
	l.plain = l.plain[n:]
	return n, nil
}

// next opens the next whole record in the buffer, reading the socket
// when there is none.
func (l *recordLayer) next() error {
	if l.inHi-l.inLo >= 5 {
		n := 5 + int(binary.BigEndian.Uint16(l.in[l.inLo+3:]))
		if n > 5+tlsRecordMax {
			return errRecordType
		}
		if l.inHi-l.inLo >= n {
			rec := l.in[l.inLo : l.inLo+n]
			l.inLo += n
			return l.open(rec)
		}
	}
	if l.inLo > 0 { // keep the partial record at the front
		l.inHi = copy(l.in, l.in[l.inLo:l.inHi])
		l.inLo = 0
	}
	n, err := rawsock.Read(l.fd, l.in[l.inHi:])
	switch {
	case err != nil:
		return err
	case n == 0:
		return errServerClosed
	}
	l.inHi += n
	return nil
}

// errServerClosed ends a read as EOF does.
var errServerClosed = errors.New("server closed")

// open authenticates and decrypts rec in place and keeps its plaintext
// if it is application data.
func (l *recordLayer) open(rec []byte) error {
	if rec[0] != recAppData {
		return errRecordType
	}
	body := rec[5:]
	pt, err := l.rd.aead.Open(body[:0], l.rd.nextNonce(), body, rec[:5])
	if err != nil {
		return errRecordAuth
	}
	i := len(pt) - 1
	for i >= 0 && pt[i] == 0 {
		i--
	}
	if i < 0 {
		return errRecordType
	}
	switch pt[i] {
	case recAppData:
		l.plain = pt[:i]
	case recHandshake: // session tickets: dropped; a KeyUpdate (24) is not followed
		if i > 0 && pt[0] == 24 {
			return errRecordUpdate
		}
	case recAlert:
		if i == 2 && pt[1] == 0 { // close_notify
			return errServerClosed
		}
		return errRecordAlert
	default:
		return errRecordType
	}
	return nil
}

// seal seals up to tlsChunk of iov's plaintext into records in the out
// buffer, which must be empty; it returns the plaintext bytes taken.
func (l *recordLayer) seal(iov []unix.Iovec) int {
	l.out, l.outOff = l.out[:0], 0
	taken := 0
	for _, v := range iov {
		p := unsafe.Slice(v.Base, v.Len)
		for len(p) > 0 && taken < tlsChunk {
			n := min(len(p), 1<<14, tlsChunk-taken)
			l.sealRecord(p[:n])
			p, taken = p[n:], taken+n
		}
	}
	return taken
}

// sealRecord appends one application record of p.
func (l *recordLayer) sealRecord(p []byte) {
	n := len(p) + 1 + l.wr.aead.Overhead()
	start := len(l.out)
	// Room for the whole record, tag included, so Seal works in place:
	// newRecordLayer sizes out for a chunk of full records; many tiny
	// iovecs (a record each) could pass that, and only then does this grow.
	l.out = slices.Grow(l.out, 5+n)
	l.out = append(l.out, recAppData, 3, 3, byte(n>>8), byte(n))
	l.out = append(l.out, p...)
	l.out = append(l.out, recAppData)
	body := l.out[start+5:]
	l.wr.aead.Seal(body[:0], l.wr.nextNonce(), body, l.out[start:start+5])
	l.out = l.out[:start+5+n]
}

// flush writes the sealed records until done or EAGAIN.
func (l *recordLayer) flush() error { return flushOut(l.fd, &l.out, &l.outOff) }
