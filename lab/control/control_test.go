package control_test

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/control"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/lab/resp"
	"github.com/linerate/linerate/lab/tlsgen"
)

func TestControlPlaneRefusesMalformedReplies(t *testing.T) {
	for _, cmd := range []string{"AUTH", "PING", "INFO", "CONFIG", "DBSIZE", "FLUSHALL"} {
		for _, tc := range labtest.Malformed {
			t.Run(cmd+"/"+tc.Name, func(t *testing.T) {
				p := labtest.StartPeer(t, labtest.Sabotage(cmd, tc.Write))
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				err := controlSession(ctx, lab.Workload{Host: "127.0.0.1", Port: p.Port, Password: "secret"})
				runtime.ReadMemStats(&after)
				if err == nil {
					t.Fatal("a malformed reply was accepted")
				}
				if !strings.Contains(err.Error(), p.Addr) || !strings.Contains(err.Error(), cmd) || !errors.Is(err, resp.ErrMalformed) {
					t.Errorf("want a malformed reply to %s named with the server %s, got %v", cmd, p.Addr, err)
				}
				if strings.Contains(err.Error(), "secret") || strings.ContainsAny(err.Error(), "\r\n") {
					t.Errorf("error is not one line free of the password: %q", err)
				}
				if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
					t.Errorf("refused only by the deadline, not by the reply: %v", err)
				}
				if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
					t.Errorf("allocated %d MB reading it", grew>>20)
				}
			})
		}
	}
}

// controlSession is what a bench run asks the control plane.
func controlSession(ctx context.Context, w lab.Workload) error {
	ctl, err := control.Dial(ctx, w)
	if err != nil {
		return err
	}
	defer ctl.Close()
	if _, err := ctl.ServerInfo(ctx); err != nil {
		return err
	}
	if _, err = ctl.DBSize(ctx); err != nil {
		return err
	}
	return ctl.FlushAll(ctx)
}

// A TLS-only server (--port 0 --tls-port): the control plane dials it
// with the run's CA and reads INFO and flushes as over TCP; a client that
// trusts another CA is refused at once, the error naming the certificate
// problem; a plain connection fails, never hangs.
func TestControlPlaneSpeaksTLS(t *testing.T) {
	b, err := tlsgen.Generate(tlsgen.Options{IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	files, err := b.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv := labtest.StartServerWith(t, labtest.Need(t, "redis-server"), nil, func(port int) []string { return files.ServerArgs(port, false) })
	cfg, err := b.ClientConfig("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := lab.Workload{Host: "127.0.0.1", Port: srv.Port}
	ctl, err := control.DialWith(ctx, w, control.Options{TLS: cfg})
	if err != nil {
		t.Fatalf("TLS control plane: %v", err)
	}
	si, err := ctl.ServerInfo(ctx)
	if err != nil || si.Name != "redis" || si.Version == "" {
		t.Errorf("INFO over TLS: %+v, %v", si, err)
	}
	if err := ctl.FlushAll(ctx); err != nil {
		t.Errorf("FLUSHALL over TLS: %v", err)
	}
	ctl.Close()

	other, err := tlsgen.Generate(tlsgen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	wrong, err := other.ClientConfig("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = control.DialWith(ctx, w, control.Options{TLS: wrong})
	if err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") || !strings.Contains(err.Error(), srv.Addr) {
		t.Errorf("a client trusting another CA: %v; want the certificate problem and the server named", err)
	}
	// Refused at the handshake, not at the context's deadline.
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("refused only at the deadline: %v", err)
	}
	if c, err := control.Dial(ctx, w); err == nil {
		c.Close()
		t.Error("a plain control connection to a TLS-only port worked")
	}
}
