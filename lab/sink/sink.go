// Package sink is linerate sink: a RESP target that costs as little as a
// server can, to measure the client's own ceiling on a host pair.
package sink

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/internal/rawsock"
	"github.com/linerate/linerate/lab/resp"
)

// Server is a RESP target that costs as little as a server can: GET answers
// with the pre-built value for the key (valid for --verify), SET payloads
// are dropped in the kernel. Benching against it measures the client's own
// ceiling on a host pair.
type Server struct {
	// Layout is the value pattern: of the one size every key has, or of
	// a mix's largest size, whose prefixes are the smaller values.
	Layout *lab.ValueLayout
	// Sizes gives each key its size (lab.SizeMix.SizeFor with Layout's
	// seed); zero: every key is Layout.Size.
	Sizes    lab.SizeMix
	Keyspace int // what DBSIZE reports: every key in it "exists"
	KeySize  int
	// Probe is the layout of the probe's keys (ids Keyspace to
	// Keyspace+lab.ProbeKeys-1); nil: no probe.
	Probe *lab.ValueLayout
	// Delay holds every reply back this long: a slow server, whose
	// requests queue on their connection (each connection is served in
	// order, one request at a time).
	Delay time.Duration
	// Link makes GET replies the link's load rather than values: the
	// value's length of one small block repeated, which stays in the
	// CPU's cache, each copy lined up with where its bytes land in the
	// socket's buffer. Sending a value from its own 8 MiB, as a server
	// must, costs the sender about twice as much per byte (its copy reads
	// memory, not cache, and on this CPU a copy whose source and
	// destination sit at different offsets within 64 bytes is slower);
	// on a host whose CPUs the link's traffic keeps busy that took a
	// fifth off the figure the link calibration measures. The replies are
	// not verifiable values: bench with --verify none.
	Link bool
	// Send is how GET bodies go out (lab.Send): copy, or splice (page
	// references through a pipe: the sink copies nothing). Zero (auto) is
	// copy: 8 connections of 8 MiB GETs on loopback, alternated, read
	// 24-31 Gbit/s spliced against 36-63 copied, and the bench's CPU per
	// GB doubled (its MSG_TRUNC frees page fragments of user memory, which
	// costs more than the sink's copy saves). Zerocopy is taken as
	// splice. The Server, and so its
	// Layout and hot block, must outlive Serve; both are written before
	// the first connection and never again, so no page is written while
	// the kernel holds a reference to it.
	Send lab.Send
	// Threads is how many connections are served at once each on an OS
	// thread of its own, outside Go's netpoller (thread.go); the rest on
	// Go's netpoller. Zero: DefaultThreads; negative: none.
	Threads int
	// procs is GOMAXPROCS when Serve started; onThreads counts the
	// connections on threads of their own (thread.go), live holds those
	// whose sockets are open.
	threadMu  sync.Mutex
	procs     int
	onThreads int
	live      map[*threadConn]struct{}
	// open counts the connections being served, for sendChunk.
	open atomic.Int32
	// hot is Link's block, made at the first connection.
	hotOnce sync.Once
	hot     []byte
}

// linkBlock is the repeated block of a Link reply: iperf3's default
// block size, small enough to stay in a core's cache.
const linkBlock = 128 << 10

// MaxDelay bounds --delay: a slower sink answers nothing a bench waits for.
const MaxDelay = time.Minute

// New is a sink serving what a bench of these flags asks for: every key
// at the size sizes gives it under seed, the probe's keys at probe (0: no
// probe), each value valid for --verify.
func New(sizes lab.SizeMix, seed uint64, keyspace int, probe lab.Size) *Server {
	s := &Server{Layout: lab.NewValueLayout(int64(sizes.Max()), seed), Keyspace: keyspace}
	if _, one := sizes.Single(); !one {
		s.Sizes = sizes
	}
	if probe > 0 {
		s.Probe = lab.NewValueLayout(int64(probe), seed)
	}
	return s
}

// layoutOf is key id's value layout.
func (s *Server) layoutOf(id uint32) lab.ValueLayout {
	switch {
	case s.Probe != nil && id >= uint32(s.Keyspace) && id < uint32(s.Keyspace)+lab.ProbeKeys:
		return *s.Probe
	case s.Sizes.IsZero():
		return *s.Layout
	}
	return s.Layout.Prefix(int64(s.Sizes.SizeFor(s.Layout.Seed, id)))
}

// dbSize is what DBSIZE reports.
func (s *Server) dbSize() int {
	if s.Probe != nil {
		return s.Keyspace + lab.ProbeKeys
	}
	return s.Keyspace
}

// Serve accepts connections on l until ctx ends.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	var wg sync.WaitGroup
	conns := map[net.Conn]struct{}{}
	var mu sync.Mutex
	// stop ends the connections on threads of their own, whose sockets
	// Go's Close no longer reaches.
	var stop atomic.Bool
	s.procs = runtime.GOMAXPROCS(0)
	go func() {
		<-ctx.Done()
		stop.Store(true)
		s.shutThreads()
		l.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	defer wg.Wait()
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("sink accept: %w", err)
		}
		mu.Lock()
		conns[c] = struct{}{}
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = s.serveConn(c, &stop)
			c.Close()
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
		}()
	}
}

type sinkConn struct {
	s *Server
	// raw is the socket: Go's (the netpoller waits), or th, its own
	// thread's (thread.go). Every read and write is a raw call through it.
	raw   syscall.RawConn
	th    *threadConn // nil: on Go's netpoller
	r     *bufio.Reader
	in    rawReader // what r reads from
	args  [][]byte
	bufs  net.Buffers
	batch net.Buffers // one send call's part of bufs
	out   net.Buffers // what is left of batch to write
	iov   []unix.Iovec
	wrote int // the last writev's bytes
	werr  error
	reply []byte
	hdr   [lab.ValueHeaderLen]byte
	tail  [lab.ValueTrailerLen + 2]byte
	// sent is the bytes written on the connection: where the next
	// reply's bytes start in the stream, for Link's alignment.
	sent int64
	// lowat is the socket's SO_RCVLOWAT as wakeFor set it; 0 is the
	// kernel's 1. lowatWant is what setLowat sets.
	lowat, lowatWant int
	// The kernel drop's state, for dropCall.
	dropLeft int64
	dropGot  int
	dropErr  error
	// Method values made once: one made per call escapes to the heap.
	setLowat  func(uintptr)
	dropCall  func(uintptr) bool
	writeCall func(uintptr) bool
	// copyDrop reads SET payloads into user space and throws them away
	// instead of dropping them in the kernel: LINERATE_NO_MSG_TRUNC=1, the
	// bench's own switch, so both ends copy as iperf3 and servers do (the
	// link calibration's test compares them).
	copyDrop bool
	ref      refSend // GET bodies by reference (ref.go); pipe nil: copied
}

// serveConn serves c on a thread of its own while the bound allows
// (thread.go), else on Go's netpoller, until the client leaves or stop.
func (s *Server) serveConn(c net.Conn, stop *atomic.Bool) error {
	sc, err := s.onThread(c, stop)
	if sc == nil && err == nil {
		sc, err = s.newConn(c)
	}
	if err != nil {
		return err
	}
	defer sc.close()
	s.open.Add(1)
	defer s.open.Add(-1)
	for {
		if err := sc.serveOne(); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
	}
}

// newConn sets up one connection's state on Go's netpoller.
func (s *Server) newConn(c net.Conn) (*sinkConn, error) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil, errors.New("sink needs TCP")
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil, err
	}
	return s.connOn(raw)
}

// connOn sets up one connection's state on raw.
func (s *Server) connOn(raw syscall.RawConn) (*sinkConn, error) {
	if s.Link {
		s.hotOnce.Do(func() {
			// 64 bytes spare, to start the block at any offset within
			// a cache line.
			s.hot = make([]byte, linkBlock+64)
			copy(s.hot, s.Layout.Body)
		})
	}
	copyDrop := os.Getenv("LINERATE_NO_MSG_TRUNC") == "1"
	rsize := 64 << 10
	if copyDrop {
		// Reads that copy every payload byte: the bench's size. One flow
		// on the veth pair, a Python reader, 128 KiB writes: 64 KiB reads
		// 14.7-18.6 Gbit/s, 128 KiB 20.4-21.5, 256 KiB 18.4-19.3, 1 MiB 15.
		rsize = 256 << 10
	}
	sc := &sinkConn{s: s, raw: raw, reply: make([]byte, 0, 64), copyDrop: copyDrop}
	sc.in.open(raw)
	sc.r = bufio.NewReaderSize(&sc.in, rsize)
	sc.setLowat, sc.dropCall, sc.writeCall = sc.setLowatOnce, sc.dropOnce, sc.writeOnce
	if err := sc.ref.open(s.Send); err != nil {
		return nil, err
	}
	return sc, nil
}

// close lets go of the connection's pipe and, on a thread of its own,
// of its socket and thread; Serve closes Go's.
func (sc *sinkConn) close() {
	sc.ref.close(sc.raw)
	if sc.th != nil {
		sc.s.closeThread(sc.th)
	}
}

// readLine reads one CRLF-terminated line.
func (sc *sinkConn) readLine() ([]byte, error) {
	line, err := sc.r.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("sink: malformed line %q", line)
	}
	return line[:len(line)-2], nil
}

// serveOne reads one command. Small arguments are kept; the value of a SET
// (the last argument) is dropped without being copied.
func (sc *sinkConn) serveOne() error {
	line, err := sc.readLine()
	if err != nil {
		return err
	}
	if len(line) == 0 || line[0] != '*' {
		return sc.simple("-ERR sink speaks RESP arrays only")
	}
	n, ok := resp.ParseInt(line[1:])
	if !ok || n < 1 || n > 64 {
		return fmt.Errorf("sink: bad array header %q", line)
	}
	sc.args = sc.args[:0]
	var dropped int64 = -1
	for i := int64(0); i < n; i++ {
		h, err := sc.readLine()
		if err != nil {
			return err
		}
		if len(h) == 0 || h[0] != '$' {
			return fmt.Errorf("sink: bad bulk header %q", h)
		}
		l, ok := resp.ParseInt(h[1:])
		if !ok || l < 0 {
			return fmt.Errorf("sink: bad bulk length %q", h)
		}
		if i == 2 && len(sc.args) == 2 && strings.EqualFold(string(sc.args[0]), "SET") {
			if l > int64(lab.MaxValueSize) {
				return fmt.Errorf("sink: a %d-byte value, larger than any linerate writes", l)
			}
			if err := sc.drop(l + 2); err != nil {
				return err
			}
			dropped = l
			continue
		}
		if l > 1<<20 {
			return fmt.Errorf("sink: %d-byte argument where only SET values may be large", l)
		}
		b := make([]byte, l+2)
		if _, err := io.ReadFull(sc.r, b); err != nil {
			return err
		}
		sc.args = append(sc.args, b[:l])
	}
	return sc.dispatch(dropped)
}

// drop discards n bytes: first what bufio already holds, then the rest in
// the kernel with MSG_TRUNC.
func (sc *sinkConn) drop(n int64) error {
	if b := int64(sc.r.Buffered()); b > 0 {
		k := min(b, n)
		if _, err := sc.r.Discard(int(k)); err != nil {
			return err
		}
		n -= k
	}
	for sc.copyDrop && n > 0 {
		sc.wakeFor(n)
		// bufio waits inside Discard without asking again: a piece that
		// leaves the low mark's worth.
		got, err := sc.r.Discard(int(rawsock.ChunkBefore(n)))
		n -= int64(got)
		if err != nil {
			return err
		}
	}
	for n > 0 {
		sc.wakeFor(n)
		// A piece that leaves the low mark's worth, as the copying drop
		// takes: dropped whole in one call, the payload's end left the
		// mark at RecvLowat, and the next request (a few bytes) woke
		// nobody: a GET after a SET waited for the bench's timeout.
		sc.dropLeft = rawsock.ChunkBefore(n)
		if err := sc.raw.Read(sc.dropCall); err != nil {
			return err
		}
		if rawsock.TruncRefused(sc.dropErr) {
			// This kernel will not drop in place: copy for good.
			sc.copyDrop = true
			return sc.drop(n)
		}
		if sc.dropErr != nil {
			return sc.dropErr
		}
		if sc.dropGot == 0 {
			return io.EOF
		}
		n -= int64(sc.dropGot)
	}
	return nil
}

// dropOnce drops up to dropLeft bytes in the kernel: sc.dropCall, what
// raw.Read calls again until the socket has something (it returns after
// any progress, and wakeFor runs before the next call).
func (sc *sinkConn) dropOnce(fd uintptr) bool {
	sc.dropGot, sc.dropErr = rawsock.Discard(int(fd), int(min(sc.dropLeft, rawsock.MaxDiscard)))
	return !rawsock.IsAgain(sc.dropErr)
}

// wakeFor sets how many bytes the kernel gathers before it wakes this
// connection's goroutine, for left bytes of a SET's payload still to come
// (rawsock.LowatFor, as the raw engine's readers do). A failed setsockopt
// leaves sc.lowat as it was, so the next call asks again; on an open
// socket it does not fail.
func (sc *sinkConn) wakeFor(left int64) {
	want := rawsock.LowatFor(left)
	if want == max(sc.lowat, 1) {
		return
	}
	sc.lowatWant = want
	_ = sc.raw.Control(sc.setLowat)
}

// setLowatOnce sets the socket's mark to lowatWant: sc.setLowat.
func (sc *sinkConn) setLowatOnce(fd uintptr) {
	if rawsock.SetRecvLowat(int(fd), sc.lowatWant) == nil {
		sc.lowat = sc.lowatWant
	}
}

// simple answers s and CRLF, copied: the reply buffer is written again
// for the next reply, so it never goes by reference.
func (sc *sinkConn) simple(s string) error {
	sc.reply = append(append(sc.reply[:0], s...), "\r\n"...)
	sc.bufs = append(sc.bufs[:0], sc.reply)
	return sc.send(false)
}

func (sc *sinkConn) dispatch(dropped int64) error {
	if sc.s.Delay > 0 {
		time.Sleep(sc.s.Delay)
	}
	cmd := strings.ToUpper(string(sc.args[0]))
	switch cmd {
	case "GET":
		if len(sc.args) != 2 {
			return sc.simple("-ERR wrong number of arguments for 'get' command")
		}
		return sc.get(sc.args[1])
	case "SET":
		if dropped < 0 {
			return sc.simple("-ERR wrong number of arguments for 'set' command")
		}
		return sc.simple("+OK")
	case "PING":
		return sc.simple("+PONG")
	case "AUTH", "FLUSHALL", "FLUSHDB", "SELECT":
		return sc.simple("+OK")
	case "CLIENT":
		return sc.simple("+OK")
	case "DBSIZE":
		return sc.simple(":" + strconv.Itoa(sc.s.dbSize()))
	case "CONFIG":
		return sc.simple("*0")
	case "INFO":
		info := "# Server\r\nredis_version:0.0.0\r\nserver_name:" + lab.SinkName + "\r\nio_threads_active:0\r\n"
		return sc.simple("$" + strconv.Itoa(len(info)) + "\r\n" + info)
	}
	return sc.simple("-ERR unknown command '" + cmd + "' (linerate sink answers GET, SET, PING, INFO, DBSIZE)")
}

// get answers with the value for key from the shared body: a vectored write
// of the bulk header, the per-key header, the shared body and the trailer.
func (sc *sinkConn) get(key []byte) error {
	id, ok := lab.ParseKeyID(key)
	if !ok {
		return sc.simple("$-1")
	}
	l := sc.s.layoutOf(id)
	sc.reply = append(strconv.AppendInt(append(sc.reply[:0], '$'), l.Size, 10), "\r\n"...)
	sc.bufs = sc.bufs[:0]
	switch {
	case sc.s.Link:
		sc.bufs = append(sc.bufs, sc.reply)
		sc.linkBody(sc.sent+int64(len(sc.reply)), l.Size)
		sc.bufs = append(sc.bufs, crlf)
	case l.Size >= lab.MinVerifiableSize:
		l.PutHeader(sc.hdr[:], id, 0)
		l.PutTrailer(sc.tail[:lab.ValueTrailerLen], id, 0)
		sc.tail[lab.ValueTrailerLen], sc.tail[lab.ValueTrailerLen+1] = '\r', '\n'
		sc.bufs = append(sc.bufs, sc.reply, sc.hdr[:], l.Body[lab.ValueHeaderLen:l.Size-lab.ValueTrailerLen], sc.tail[:])
	default:
		sc.bufs = append(sc.bufs, sc.reply, l.Body[:l.Size], crlf)
	}
	return sc.send(true)
}

// send writes sc.bufs in vectored writes of at most sendChunk bytes
// each, a body by reference when byRef and the connection sends so
// (ref.go). It cuts sc.bufs as it goes.
func (sc *sinkConn) send(byRef bool) error {
	bufs := sc.bufs
	for len(bufs) > 0 {
		if byRef && sc.ref.takes(bufs[0]) {
			if err := sc.spliceAll(bufs[0]); err != nil {
				return err
			}
			bufs = bufs[1:]
			continue
		}
		batch, room := sc.batch[:0], sc.s.sendChunk()
		for len(bufs) > 0 && room > 0 && len(batch) < maxIov && !(byRef && sc.ref.takes(bufs[0])) {
			b := bufs[0]
			if len(b) > room {
				batch, bufs[0] = append(batch, b[:room]), b[room:]
				break
			}
			if len(b) > 0 {
				batch, room = append(batch, b), room-len(b)
			}
			bufs = bufs[1:]
		}
		sc.batch = batch
		if err := sc.write(batch); err != nil {
			return err
		}
	}
	return nil
}

// maxIov is the most buffers one writev takes (the kernel's IOV_MAX).
const maxIov = 1024

// write writes batch whole, one writev at a time.
func (sc *sinkConn) write(batch net.Buffers) error {
	// A field, not a local: the callback reads it, and a local would
	// escape to the heap on every call.
	sc.out = batch
	for len(sc.out) > 0 {
		if err := sc.raw.Write(sc.writeCall); err != nil {
			return err
		}
		if sc.werr != nil {
			return fmt.Errorf("sink writev: %w", sc.werr)
		}
		sc.sent += int64(sc.wrote)
		for n := sc.wrote; n > 0; {
			if n < len(sc.out[0]) {
				sc.out[0] = sc.out[0][n:]
				break
			}
			n -= len(sc.out[0])
			sc.out = sc.out[1:]
		}
	}
	return nil
}

// writeOnce writes what is left of sc.out in one writev: sc.writeCall,
// what raw.Write calls again until the socket takes something.
func (sc *sinkConn) writeOnce(fd uintptr) bool {
	iov := sc.iov[:0]
	for _, b := range sc.out {
		iov = append(iov, unix.Iovec{})
		rawsock.SetIov(&iov[len(iov)-1], b)
	}
	sc.iov = iov
	sc.wrote, sc.werr = rawsock.Writev(int(fd), iov)
	return !rawsock.IsAgain(sc.werr)
}

// rawReader reads the socket through its RawConn with raw calls, on
// either kind of connection: the connection's bufio.Reader reads it.
type rawReader struct {
	raw  syscall.RawConn
	p    []byte
	n    int
	err  error
	call func(uintptr) bool // readOnce, made once: a method value per call escapes
}

func (r *rawReader) open(raw syscall.RawConn) { r.raw, r.call = raw, r.readOnce }

// Read reads into p what the socket has, waiting for something.
func (r *rawReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.p = p
	err := r.raw.Read(r.call)
	r.p = nil
	switch {
	case err != nil:
		return 0, err
	case r.err != nil:
		return 0, fmt.Errorf("sink read: %w", r.err)
	case r.n == 0:
		return 0, io.EOF
	}
	return r.n, nil
}

func (r *rawReader) readOnce(fd uintptr) bool {
	r.n, r.err = rawsock.Read(int(fd), r.p)
	return !rawsock.IsAgain(r.err)
}

var crlf = []byte("\r\n")

// sendChunk is the most one send call of a GET reply takes: SendChunk
// while one connection is served, so one flow is not sent in bursts (the
// gain rawsock.SendChunk's comment measures), and a whole reply with
// more: 8 connections of 8 MiB GETs on loopback, alternated against the
// sink sending whole replies (commit 15fd4ee), read 30-50 Gbit/s in
// 128 KiB calls against its 41-74, and the bench's CPU per GB doubled,
// woken by more, smaller bursts.
func (s *Server) sendChunk() int {
	if s.open.Load() <= 1 {
		return rawsock.SendChunk
	}
	return wholeReply
}

// wholeReply bounds a send call by nothing but the reply.
const wholeReply = 1 << 30

// linkBody appends size bytes of the hot block to the reply's buffers,
// the first at stream offset pos: each starts at the block's offset whose
// address is pos's within 64 bytes, so the kernel's copy into its buffer
// (which fills in stream order) has source and destination lined up.
func (sc *sinkConn) linkBody(pos, size int64) {
	base := int64(uintptr(unsafe.Pointer(&sc.s.hot[0])) % 64)
	off := ((pos%64-base)%64 + 64) % 64
	for size > 0 {
		k := min(size, linkBlock) // a multiple of 64: the next starts lined up too
		sc.bufs = append(sc.bufs, sc.s.hot[off:off+k])
		size -= k
	}
}

// Listen opens the sink's listener with a large accept backlog.
func Listen(addr string) (net.Listener, error) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	return lc.Listen(context.Background(), "tcp", addr)
}
