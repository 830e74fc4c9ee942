package sink_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/sink"
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
			go (&sink.Server{Layout: lab.NewValueLayout(4096, 1), Keyspace: 8}).Serve(ctx, l)
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
