package launch_test

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/launch"
	"github.com/linerate/linerate/infra/servers/serverstest"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/control"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/lab/tlsgen"
)

// tlsLaunchers are the builds the issue names: valkey 9.1 from the store
// (installed when missing, into the user's store) and Debian's redis.
func tlsLaunchers(t *testing.T) map[string]*launch.Local {
	t.Helper()
	inst := serverstest.Valkey(t)
	return map[string]*launch.Local{
		"valkey-9.1": inst.Launcher(),
		"redis-deb":  {Binary: labtest.Need(t, "redis-server"), Identity: infra.ServerIdentity{Kind: infra.Redis, Source: "path"}},
	}
}

// A TLS-only start: the launcher makes the run's CA and certificate,
// starts the server with --port 0 --tls-port, and its readiness PING, INFO
// facts and SHUTDOWN go over TLS; the facts say how to trust it, and the
// control plane does INFO and FLUSHALL with that; a plain connection gets
// nothing.
func TestLocalStartsTLSOnly(t *testing.T) {
	for name, l := range tlsLaunchers(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			srv, err := l.Start(ctx, infra.ServerSettings{TLS: true, LogDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Stop(ctx)
			f := srv.Facts()
			if f.InfoServer["redis_version"] == "" || f.Config["port"] != "0" || f.Config["tls-port"] == "0" || f.Config["tls-port"] == "" {
				t.Errorf("facts over TLS: version %q, port %q, tls-port %q", f.InfoServer["redis_version"], f.Config["port"], f.Config["tls-port"])
			}
			if !slices.Contains(f.Argv, "--tls-port") || f.TLS == nil || f.TLS.ServerName != "127.0.0.1" || len(f.TLS.CA) == 0 {
				t.Fatalf("argv %v, tls %+v", f.Argv, f.TLS)
			}
			cfg, err := f.TLS.ClientConfig()
			if err != nil {
				t.Fatal(err)
			}
			host, port, _ := net.SplitHostPort(srv.Addr())
			w := lab.Workload{Host: host}
			w.Port, _ = strconv.Atoi(port)
			ctl, err := control.DialWith(ctx, w, control.Options{TLS: cfg})
			if err != nil {
				t.Fatalf("control plane over TLS: %v", err)
			}
			if _, err := ctl.Info(ctx, "memory"); err != nil {
				t.Error(err)
			}
			if err := ctl.FlushAll(ctx); err != nil {
				t.Error(err)
			}
			ctl.Close()
			if c, err := control.Dial(ctx, w); err == nil {
				c.Close()
				t.Error("a plain connection to the TLS-only server worked")
			}
			// SHUTDOWN NOSAVE over TLS ends it: Stop escalates to
			// SIGTERM otherwise, and says so.
			if err := srv.Stop(ctx); err != nil {
				t.Errorf("stop: %v", err)
			}
			if _, open := <-srv.Exited(); open {
				t.Error("the stop was reported as an unexpected exit")
			}
		})
	}
}

// Certificate files made elsewhere whose CA did not sign the server's
// certificate: the start fails at once, not after the start timeout, and
// the error names the certificate problem; nothing is left running.
func TestLocalTLSWrongCA(t *testing.T) {
	dir := t.TempDir()
	good, err := tlsgen.Generate(tlsgen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := tlsgen.Generate(tlsgen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	files, err := good.Write(filepath.Join(dir, "good"))
	if err != nil {
		t.Fatal(err)
	}
	wrong, err := other.Write(filepath.Join(dir, "other"))
	if err != nil {
		t.Fatal(err)
	}
	files.CA = wrong.CA // the server trusts (and the launcher checks with) another CA
	l := &launch.Local{Binary: labtest.Need(t, "redis-server"), Identity: infra.ServerIdentity{Kind: infra.Redis, Source: "path"}}
	srv, err := l.Start(context.Background(), infra.ServerSettings{TLS: true, TLSFiles: &files, LogDir: t.TempDir(), StartTimeout: time.Minute})
	if err == nil {
		srv.Stop(context.Background())
		t.Fatal("a server whose certificate the CA did not sign was taken as ready")
	}
	if !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Errorf("error %q does not name the certificate problem", err)
	}
	// Refused at the first handshake, not at the start timeout.
	if errors.Is(err, launch.ErrNotReady) {
		t.Errorf("refused only at the start timeout: %v", err)
	}
}

// A relative log directory (an agent's default is under its login
// directory) still gives the server certificate paths it can open: it
// runs inside its log directory, so paths relative to the launcher's
// would point below that.
func TestLocalTLSRelativeLogDir(t *testing.T) {
	t.Chdir(t.TempDir())
	l := &launch.Local{Binary: labtest.Need(t, "redis-server"), Identity: infra.ServerIdentity{Kind: infra.Redis, Source: "path"}}
	ctx := context.Background()
	srv, err := l.Start(ctx, infra.ServerSettings{TLS: true, LogDir: filepath.Join("logs", "one"), StartTimeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("TLS start with a relative log dir: %v", err)
	}
	defer srv.Stop(ctx)
	if ca := srv.Facts().TLS.CAFile; !filepath.IsAbs(ca) {
		t.Errorf("the CA file %q is relative: a bench elsewhere in the tree cannot read it", ca)
	}
}
