package launch

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/lab/resp"
)

// peerServer is a localServer whose address is a scripted peer: what the
// launcher asks a server it started (PING until ready, INFO and CONFIG GET
// for the facts, SHUTDOWN to stop) goes to the script.
func peerServer(t *testing.T, script labtest.Script) (*localServer, *labtest.Peer) {
	p := labtest.StartPeer(t, script)
	s := &localServer{settings: infra.ServerSettings{RequirePass: "secret", StartTimeout: 20 * time.Second},
		done: make(chan struct{}), exited: make(chan infra.Exit, 1)}
	s.facts = infra.ServerFacts{Argv: []string{"fake-server"}, PID: os.Getpid(), Addr: p.Addr}
	return s, p
}

// Readiness and facts capture turn a malformed reply into an error naming
// the server, at once (not after the start timeout) and without holding
// what the peer announced.
func TestLaunchControlRefusesMalformedReplies(t *testing.T) {
	s, _ := peerServer(t, labtest.Redis())
	if err := s.ready(context.Background(), s.settings); err != nil {
		t.Fatalf("a good peer is not ready: %v", err)
	}
	if err := s.capture(context.Background()); err != nil || s.facts.InfoServer["redis_version"] != "7.2.4" || s.facts.Config["io-threads"] != "4" {
		t.Fatalf("facts from a good peer: %v %+v", err, s.facts)
	}
	for _, cmd := range []string{"AUTH", "PING", "INFO", "CONFIG"} {
		for _, tc := range labtest.Malformed {
			t.Run(cmd+"/"+tc.Name, func(t *testing.T) {
				s, p := peerServer(t, labtest.Sabotage(cmd, tc.Write))
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				err := s.ready(context.Background(), s.settings)
				if err == nil {
					err = s.capture(context.Background())
				}
				runtime.ReadMemStats(&after)
				if !errors.Is(err, resp.ErrMalformed) || errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), p.Addr) {
					t.Errorf("want a malformed reply named with %s at once, got %v", p.Addr, err)
				}
				if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
					t.Errorf("allocated %d MB reading it", grew>>20)
				}
			})
		}
	}
}

// A server that answers SHUTDOWN with a reply that never ends is still
// stopped: SIGTERM follows within the stop step, and the reply is not
// held meanwhile.
func TestStopPastMalformedShutdownReply(t *testing.T) {
	s, _ := peerServer(t, labtest.Sabotage("SHUTDOWN", func(w io.Writer) error { return labtest.Endless(w, "+", 'x', 1<<30) }))
	s.cmd = exec.Command("sleep", "60")
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.settings.StopTimeout = 2 * time.Second
	go s.wait()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	err := s.Stop(context.Background())
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("allocated %d MB reading the reply", grew>>20)
	}
	if err == nil || !strings.Contains(err.Error(), "SIGTERM did") {
		t.Errorf("stop: %v", err)
	}
	if e := s.exit; e.Signal != "SIGTERM" {
		t.Errorf("the process ended by %+v, want SIGTERM", e)
	}
	if s.cmd.Process.Signal(syscall.Signal(0)) == nil {
		t.Error("the process outlived Stop")
	}
}
