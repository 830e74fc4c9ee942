package sink_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/sink"
	"github.com/linerate/linerate/lab/sink/sinktest"
)

// The sink is a server too: a client's malformed or oversized request ends
// that connection, at once and without allocating what it announced, and
// the sink goes on serving others.
func TestSinkRefusesMalformedRequests(t *testing.T) {
	l, err := sink.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&sink.Server{Layout: lab.NewValueLayout(4096, 1), Keyspace: 8}).Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	addr := l.Addr().String()
	for _, tc := range []struct{ name, req string }{
		{"negative array length", "*-3\r\n"},
		{"too many arguments", "*100\r\n"},
		{"negative bulk length", "*2\r\n$-5\r\n"},
		{"key of 2^62 bytes", "*2\r\n$3\r\nGET\r\n$4611686018427387904\r\n"},
		{"SET value of 2^63-1 bytes", "*3\r\n$3\r\nSET\r\n$4\r\nkey1\r\n$9223372036854775807\r\n"},
		{"SET value past the largest value size", "*3\r\n$3\r\nSET\r\n$4\r\nkey1\r\n$4294967297\r\n"},
		{"line that never ends", "*" + strings.Repeat("1", 1<<20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(20 * time.Second))
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			go func() { _, _ = io.WriteString(c, tc.req) }() // the sink may close before it read all
			got, err := io.ReadAll(c)
			runtime.ReadMemStats(&after)
			if err != nil && !strings.Contains(err.Error(), "reset") {
				t.Errorf("the sink did not end the connection: %v", err)
			}
			if s := string(got); s != "" && !strings.HasPrefix(s, "-ERR") {
				t.Errorf("answered %q", s)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
				t.Errorf("allocated %d MB", grew>>20)
			}
		})
	}
	// An inline command is refused with an error, and the connection
	// serves on.
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "PING\r\n*1\r\n$4\r\nPING\r\n"); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	first, err1 := r.ReadString('\n')
	second, err2 := r.ReadString('\n')
	if err1 != nil || err2 != nil || !strings.HasPrefix(first, "-ERR") || second != "+PONG\r\n" {
		t.Errorf("the sink no longer serves: %q %q %v %v", first, second, err1, err2)
	}
}

// serve runs s on a loopback port until the test ends.
func serve(t *testing.T, s *sink.Server) string {
	t.Helper()
	return sinktest.Serve(t, s).String()
}

// dial connects to a sink for the rest of the test, with a deadline that
// ends a stuck exchange.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	return c
}

// getValue sends GET key and reads the bulk reply whole.
func getValue(t *testing.T, r *bufio.Reader, c net.Conn, key string) []byte {
	t.Helper()
	if _, err := io.WriteString(c, "*2\r\n$3\r\nGET\r\n$"+strconv.Itoa(len(key))+"\r\n"+key+"\r\n"); err != nil {
		t.Fatal(err)
	}
	line, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "$") {
		t.Fatalf("GET %s: %q %v", key, line, err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
	b := make([]byte, n+2)
	if _, err := io.ReadFull(r, b); err != nil {
		t.Fatal(err)
	}
	return b[:n]
}

// A sink for a mix serves every key at the size the mix gives it (the
// probe's keys at the probe's size), and each value verifies as the bench
// checks it: copied, or its body spliced by reference; with one
// connection (replies sent 128 KiB a call) and beside a second (whole);
// on a thread of its own (the default), on Go's netpoller (Threads -1),
// and on the netpoller beside one on a thread (Threads 1, 2 connections).
func TestSinkServesEachKeyAtItsSize(t *testing.T) {
	for _, tc := range []struct {
		send           lab.Send
		conns, threads int
	}{
		{lab.SendAuto, 1, 0}, {lab.SendSplice, 1, 0}, {lab.SendAuto, 2, 0}, {lab.SendSplice, 2, 0},
		{lab.SendAuto, 1, -1}, {lab.SendSplice, 1, -1}, {lab.SendAuto, 2, -1}, {lab.SendSplice, 2, -1},
		{lab.SendAuto, 2, 1}, {lab.SendSplice, 2, 1},
	} {
		t.Run(fmt.Sprintf("%s/%d/threads=%d", tc.send, tc.conns, tc.threads), func(t *testing.T) {
			checkEveryKey(t, tc.send, tc.conns, tc.threads)
		})
	}
}

func checkEveryKey(t *testing.T, send lab.Send, conns, threads int) {
	mix, err := lab.ParseSizeMix("4KiB:1,64KiB:1,1MiB:1")
	if err != nil {
		t.Fatal(err)
	}
	const seed, keys = 5, 12
	s := sink.New(mix, seed, keys, 100)
	s.Send, s.Threads = send, threads
	addr := serve(t, s)
	for i := 1; i < conns; i++ {
		// Open beside (the replies go whole), and served first (it has
		// the thread when there is one).
		b := dial(t, addr)
		pong(t, bufio.NewReader(b), b)
	}
	c := dial(t, addr)
	r := bufio.NewReader(c)
	pattern := lab.NewValueLayout(int64(mix.Max()), seed)
	seen := map[lab.Size]bool{}
	for key := uint32(0); key < keys+lab.ProbeKeys; key++ {
		want := int64(mix.SizeFor(seed, key))
		l := pattern.Prefix(want)
		if key >= keys {
			want = 100
			l = *lab.NewValueLayout(100, seed)
		}
		v := getValue(t, r, c, lab.KeyName(key, 16))
		if int64(len(v)) != want {
			t.Fatalf("key %d: %d bytes, want %d", key, len(v), want)
		}
		if _, ok := l.CheckEnds(v[:lab.ValueHeaderLen], v[want-lab.ValueTrailerLen:], key); !ok || !l.CheckBody(0, v) {
			t.Errorf("key %d: the value of %d bytes does not verify", key, want)
		}
		seen[lab.Size(want)] = true
	}
	if len(seen) != 4 {
		t.Errorf("sizes served: %v, want the mix's three and the probe's", seen)
	}
	if _, err := io.WriteString(c, "*1\r\n$6\r\nDBSIZE\r\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := r.ReadString('\n'); err != nil || line != ":"+strconv.Itoa(keys+lab.ProbeKeys)+"\r\n" {
		t.Errorf("DBSIZE answered %q, %v; want the keys and the probe's", line, err)
	}
}

// pong sends PING on c and requires +PONG.
func pong(t *testing.T, r *bufio.Reader, c net.Conn) {
	t.Helper()
	if _, err := io.WriteString(c, "*1\r\n$4\r\nPING\r\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := r.ReadString('\n'); err != nil || line != "+PONG\r\n" {
		t.Fatalf("PING answered %q, %v", line, err)
	}
}

// A connection on a thread of its own that sits idle (past the thread's
// bounded waits, asleep on its socket) answers when its client writes
// again, and the sink's stop ends it: Serve returns, and the client finds
// the connection closed.
func TestSinkIdleThreadConnectionWakesAndStops(t *testing.T) {
	l, err := sink.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- sink.New(lab.OneSize(4096), 1, 8, 0).Serve(ctx, l) }()
	c := dial(t, l.Addr().String())
	r := bufio.NewReader(c)
	pong(t, r, c)
	time.Sleep(200 * time.Millisecond) // four of the thread's waits: it sleeps on the socket
	pong(t, r, c)
	time.Sleep(200 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Serve did not return with an idle connection open")
	}
	if b, err := r.ReadByte(); err == nil {
		t.Errorf("the connection still answers %q after the sink stopped", b)
	}
}

// --delay holds every reply back: a connection's requests wait for one
// another, as on a server that takes that long per request.
func TestSinkDelaysEveryReply(t *testing.T) {
	const delay = 30 * time.Millisecond
	s := sink.New(lab.OneSize(4096), 1, 8, 0)
	s.Delay = delay
	c := dial(t, serve(t, s))
	start := time.Now()
	// Three pipelined requests: the third reply comes after three delays.
	if _, err := io.WriteString(c, strings.Repeat("*1\r\n$4\r\nPING\r\n", 3)); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	for i := 0; i < 3; i++ {
		if line, err := r.ReadString('\n'); err != nil || line != "+PONG\r\n" {
			t.Fatalf("reply %d: %q %v", i, line, err)
		}
	}
	if took := time.Since(start); took < 3*delay {
		t.Errorf("three pipelined requests answered in %s, want at least 3 x %s", took, delay)
	}
}

// SET payloads are dropped in the kernel, or with LINERATE_NO_MSG_TRUNC=1
// read and thrown away: either way every SET is answered, the next command
// on the connection is read where it starts, and the payload costs no
// memory of its size.
func TestSinkDropsSetPayloads(t *testing.T) {
	for _, copyDrop := range []string{"", "1"} {
		t.Run("LINERATE_NO_MSG_TRUNC="+copyDrop, func(t *testing.T) {
			t.Setenv("LINERATE_NO_MSG_TRUNC", copyDrop)
			l, err := sink.Listen("127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go sink.New(lab.OneSize(4096), 1, 8, 0).Serve(ctx, l)
			c, err := net.DialTimeout("tcp", l.Addr().String(), 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(20 * time.Second))
			const size = 8 << 20
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			go func() {
				w := bufio.NewWriter(c)
				for range 3 {
					w.WriteString("*3\r\n$3\r\nSET\r\n$4\r\nkey1\r\n$8388608\r\n")
					w.Write(make([]byte, size))
					w.WriteString("\r\n")
				}
				w.WriteString("*1\r\n$4\r\nPING\r\n")
				w.Flush()
			}()
			r := bufio.NewReader(c)
			var got []string
			for range 4 {
				line, err := r.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, line)
			}
			runtime.ReadMemStats(&after)
			if strings.Join(got, "") != "+OK\r\n+OK\r\n+OK\r\n+PONG\r\n" {
				t.Errorf("answers %q", got)
			}
			// The writer's own 3 × 8 MiB of zeros are in the count.
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 3*size+8<<20 {
				t.Errorf("allocated %d MB for 24 MB of payload", grew>>20)
			}
		})
	}
}

// --link answers GETs with one block repeated (the link's load, not
// values): every reply has the asked size and its framing, so replies of
// an odd size that start the next one off a cache line still parse one
// after another, and the body repeats with the block's period.
func TestSinkLinkRepliesRepeatOneBlock(t *testing.T) {
	const size, block = 1<<20 + 13, 128 << 10
	s := sink.New(lab.OneSize(size), 1, 4, 0)
	s.Link = true
	c := dial(t, serve(t, s))
	r := bufio.NewReader(c)
	for i := range 5 {
		key := lab.KeyName(uint32(i%4), 16)
		if _, err := io.WriteString(c, "*2\r\n$3\r\nGET\r\n$16\r\n"+key+"\r\n"); err != nil {
			t.Fatal(err)
		}
		line, err := r.ReadString('\n')
		if err != nil || line != "$"+strconv.Itoa(size)+"\r\n" {
			t.Fatalf("reply %d: header %q, %v", i, line, err)
		}
		v := make([]byte, size+2)
		if _, err := io.ReadFull(r, v); err != nil {
			t.Fatal(err)
		}
		if string(v[size:]) != "\r\n" {
			t.Fatalf("reply %d does not end in CRLF: %q", i, v[size:])
		}
		for j := 0; j+block < size; j++ {
			if v[j] != v[j+block] {
				t.Fatalf("reply %d: byte %d is not byte %d's repeat", i, j+block, j)
			}
		}
		if zero := make([]byte, block); string(v[:block]) == string(zero) {
			t.Fatalf("reply %d: the block is all zero bytes", i)
		}
	}
}
