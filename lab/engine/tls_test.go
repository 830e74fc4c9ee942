package engine_test

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/infra/servers"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/control"
	"github.com/linerate/linerate/lab/engine"
	"github.com/linerate/linerate/lab/exitcode"
	"github.com/linerate/linerate/lab/fields"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/lab/tlsgen"
)

// tlsServer is a TLS-only server (--port 0 --tls-port) with certificates
// made for the test, and the CA file a client trusts it with.
type tlsServer struct {
	*labtest.Server
	ca string
}

func startTLSServer(t *testing.T, bin string) tlsServer {
	t.Helper()
	b, err := tlsgen.Generate(tlsgen.Options{IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := b.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv := labtest.StartServerWith(t, bin, nil, func(port int) []string { return f.ServerArgs(port, false) })
	return tlsServer{srv, f.CA}
}

// tlsBinaries are the servers the TLS tests run against: Debian's
// redis-server and the store's valkey 9.1 and redis 8.0 (installed into
// the user's store when missing; a failure to install fails the test).
func tlsBinaries(t *testing.T) map[string]string {
	t.Helper()
	bins := map[string]string{"redis-deb": labtest.Need(t, "redis-server")}
	st, err := servers.Open("")
	if err != nil {
		t.Fatalf("server store: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, v := range []struct{ name, sel, runtime string }{{"valkey-9.1", "valkey@9.1", "sid"}, {"redis-8.0", "redis@8.0", ""}} {
		sel, err := servers.ParseSelector(v.sel)
		if err != nil {
			t.Fatal(err)
		}
		inst, err := st.Install(ctx, sel, servers.InstallOptions{Runtime: v.runtime})
		if err != nil {
			t.Fatalf("install %s: %v", v.sel, err)
		}
		bins[v.name] = inst.Server
	}
	return bins
}

// tlsControl opens a control connection over TLS, closed by the caller.
func tlsControl(t *testing.T, w lab.Workload) *control.Conn {
	t.Helper()
	cfg, err := fields.TLSConfig(w.TLS, w.Host)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctl, err := control.DialWith(ctx, w, control.Options{TLS: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return ctl
}

// statsOverTLS reads INFO stats's byte counters through the TLS port.
func statsOverTLS(t *testing.T, w lab.Workload) (in, out float64) {
	t.Helper()
	ctl := tlsControl(t, w)
	defer ctl.Close()
	m, err := ctl.Info(context.Background(), "stats")
	if err != nil {
		t.Fatal(err)
	}
	return counter(t, m, "total_net_input_bytes"), counter(t, m, "total_net_output_bytes")
}

// controlSession does what a run's control plane does, over TLS.
func controlSession(t *testing.T, w lab.Workload) {
	t.Helper()
	ctl := tlsControl(t, w)
	defer ctl.Close()
	if _, err := ctl.ServerInfo(context.Background()); err != nil {
		t.Fatal(err)
	}
	if w.Prefill {
		if _, err := ctl.DBSize(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// GET and SET at 1 and 16 MiB over TLS against Debian's redis and the
// store's valkey 9.1 and redis 8.0: every GET reply checked byte for byte,
// nothing failed, and the wire bytes the record states (plaintext: payload
// plus protocol, as the server's INFO counters count them) within 1 % of
// the server's counters.
func TestTLSGetSetAgainstRealServers(t *testing.T) {
	t.Parallel()
	for name, bin := range tlsBinaries(t) {
		// Servers side by side, each waiting out paced windows; a server's
		// own runs one at a time, since each reads its INFO counters.
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tlsGetSetOneServer(t, startTLSServer(t, bin))
		})
	}
}

// tlsGetSetOneServer runs TestTLSGetSetAgainstRealServers's GETs and SETs
// against one server, one after another.
func tlsGetSetOneServer(t *testing.T, srv tlsServer) {
	for _, size := range []lab.Size{1 << 20, 16 << 20} {
		for _, op := range []lab.Op{lab.OpSet, lab.OpGet} {
			t.Run(string(op)+"/"+size.String(), func(t *testing.T) {
				// 10 MiB a second, 2 requests a second of 16 MiB: the
				// bytes are matched to the server's, not how fast TLS
				// seals them (160 MiB a second took a CPU).
				rate := 10.0
				if size == 16<<20 {
					rate = 2
				}
				w := pacedWindow(lab.Workload{Host: "127.0.0.1", Port: srv.Port, Connections: 2, Threads: 1, Keyspace: 4,
					ValueSz: lab.OneSize(size), Warmup: lab.Duration(100 * time.Millisecond),
					Seed: 3, Verify: lab.VerifyFull, TLS: lab.TLS{On: true, CACert: srv.ca}}, rate)
				w.Ratio = lab.Ratio{Sets: 100}
				if op == lab.OpGet {
					w.Ratio, w.Prefill = lab.Ratio{Gets: 100}, true
				}
				// What the run's control plane costs (PING, INFO,
				// CONFIG GET, DBSIZE) is measured on its own first and
				// taken off: the data plane's bytes are what the
				// record counts.
				base0, base1 := statsOverTLS(t, w)
				controlSession(t, w)
				in0, out0 := statsOverTLS(t, w)
				ctlIn, ctlOut := in0-base0, out0-base1
				res, err := engine.Run(context.Background(), w, engine.Options{})
				if err != nil {
					t.Fatalf("run: %v", err)
				}
				in1, out1 := statsOverTLS(t, w)
				o := res.Ops[op]
				var done uint64 // in any phase: a busy machine may end none inside a 300 ms window
				for ph, p := range res.Phases {
					if ph != lab.PhasePrefill {
						done += p.Ops[op]
					}
				}
				if o == nil || done == 0 || len(res.Errors) != 0 || res.Abandoned != 0 {
					t.Fatalf("%s over TLS: ops %+v, %d done, errors %v, abandoned %d", op, o, done, res.Errors, res.Abandoned)
				}
				if res.Engine.Discard != "tls" {
					t.Errorf("engine.discard = %q, want tls", res.Engine.Discard)
				}
				if op == lab.OpSet && (res.Engine.Send != "copy" || res.Engine.SendCall != "256KiB") {
					t.Errorf("engine.send %q, send_call %q over TLS; want copy, 256KiB (plaintext sealed a call)", res.Engine.Send, res.Engine.SendCall)
				}
				var sent, recvd uint64
				for _, p := range res.Phases {
					sent += p.WireSent
					recvd += p.WireRecvd
				}
				for _, c := range []struct {
					what        string
					client, srv float64
				}{{"bytes sent vs server input", float64(sent), in1 - in0 - ctlIn}, {"bytes received vs server output", float64(recvd), out1 - out0 - ctlOut}} {
					if !wireNear(uint64(c.client), c.srv, infoDrift) {
						t.Errorf("%s: %.0f vs %.0f (more than 1%% and %d bytes apart)", c.what, c.client, c.srv, infoDrift)
					}
				}
				t.Logf("%d %s of %s, %.2f Gbps, sent %d received %d", o.Ops, op, size, o.Gbps, sent, recvd)
			})
		}
	}
}

// A server whose certificate another CA signed is a setup failure, exit 3,
// the error naming the certificate problem; a CA file that is not there is
// bad input naming --cacert.
func TestTLSWrongCAIsASetupError(t *testing.T) {
	t.Parallel()
	srv := startTLSServer(t, labtest.Need(t, "redis-server"))
	other, err := tlsgen.Generate(tlsgen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := other.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := shortWorkload(srv.Port)
	w.TLS = lab.TLS{On: true, CACert: f.CA}
	res, err := engine.Run(context.Background(), w, engine.Options{})
	if res == nil || res.Stop.ExitCode != exitcode.SetupFailed || err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Errorf("another CA: %v (record %v); want exit 3 naming the unknown authority", err, res != nil)
	}
	w.TLS.CACert = filepath.Join(t.TempDir(), "missing.crt")
	res, err = engine.Run(context.Background(), w, engine.Options{})
	if res != nil || err == nil || !strings.HasPrefix(err.Error(), "--cacert: ") || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("a missing CA file: %v; want --cacert named", err)
	}
}

// The valkey-go engine speaks TLS through its own TLSConfig: the
// cross-check works on a TLS-only server too.
func TestTLSValkeyGoEngine(t *testing.T) {
	t.Parallel()
	srv := startTLSServer(t, labtest.Need(t, "redis-server"))
	w := pacedWindow(shortWorkload(srv.Port), 20) // it checks GETs complete, not speed: emulated TLS seals at 0.15 Gbit/s
	w.Engine, w.Prefill, w.TLS = lab.EngineValkeyGo, true, lab.TLS{On: true, CACert: srv.ca}
	res, err := engine.Run(context.Background(), w, engine.Options{})
	if err != nil {
		t.Fatalf("valkey-go over TLS: %v", err)
	}
	if o := res.Ops[lab.OpGet]; o == nil || o.Ops == 0 || len(res.Errors) != 0 {
		t.Errorf("valkey-go over TLS: %+v, errors %v", o, res.Errors)
	}
}
