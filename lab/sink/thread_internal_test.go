package sink

import (
	"bufio"
	"context"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
)

// Each connection on a thread of its own holds its P while it waits, so
// the sink raises GOMAXPROCS by one for each, from its value when Serve
// started, up to Threads; connections past the bound are served on Go's
// netpoller; a connection's end gives its thread back.
func TestThreadsRaiseGOMAXPROCSUpToTheirBound(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	l, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	s := New(lab.OneSize(4096), 1, 8, 0)
	s.Threads = 2
	go func() { done <- s.Serve(ctx, l) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	var conns []net.Conn
	for i := range 3 {
		c, err := net.DialTimeout("tcp", l.Addr().String(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		// Answered: the sink has set the connection up.
		if _, err := io.WriteString(c, "*1\r\n$4\r\nPING\r\n"); err != nil {
			t.Fatal(err)
		}
		if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || line != "+PONG\r\n" {
			t.Fatalf("connection %d: PING answered %q, %v", i, line, err)
		}
		conns = append(conns, c)
	}
	if on, procs := s.threadsInUse(), runtime.GOMAXPROCS(0); on != 2 || procs != 3 {
		t.Errorf("3 connections, Threads 2, GOMAXPROCS 1 at the start: %d on threads, GOMAXPROCS %d; want 2 and 3", on, procs)
	}
	for _, c := range conns {
		c.Close()
	}
	for end := time.Now().Add(20 * time.Second); s.threadsInUse() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("every client gone: %d connections still on threads", s.threadsInUse())
		}
	}
}

func (s *Server) threadsInUse() int {
	s.threadMu.Lock()
	defer s.threadMu.Unlock()
	return s.onThreads
}
