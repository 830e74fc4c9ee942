// Package sinktest serves an in-process sink for a test.
package sinktest

import (
	"context"
	"net"
	"testing"

	"github.com/linerate/linerate/lab/sink"
)

// Serve runs s on a loopback port until the test ends, when it checks
// that s stopped without an error, and returns the port's address.
func Serve(t testing.TB, s *sink.Server) *net.TCPAddr {
	t.Helper()
	l, err := sink.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return l.Addr().(*net.TCPAddr)
}
