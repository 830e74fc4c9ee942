package launch

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/linerate/linerate/infra"
)

// Every start leaves no goroutine behind once its server is stopped or
// reported dead. With LAUNCH_HELPER=serve the test binary is instead a
// runner that starts one server (LAUNCH_BIN, pinned to LAUNCH_CPUS when
// set), prints its PID and waits to be killed.
func TestMain(m *testing.M) {
	if os.Getenv("LAUNCH_HELPER") == "serve" {
		l := &Local{Binary: os.Getenv("LAUNCH_BIN")}
		srv, err := l.Start(context.Background(), infra.ServerSettings{Kind: infra.Redis, CPUs: os.Getenv("LAUNCH_CPUS"), LogDir: os.Getenv("LAUNCH_DIR")})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("pid", srv.Facts().PID)
		time.Sleep(time.Minute) // bounded: the test kills it long before
		_ = srv.Stop(context.Background())
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}
