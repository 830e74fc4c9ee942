package control_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/control"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/lab/resp"
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
