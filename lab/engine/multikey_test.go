package engine_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/linerate/linerate/infra/servers/serverstest"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/control"
	"github.com/linerate/linerate/lab/engine"
	"github.com/linerate/linerate/lab/labtest"
)

// multiServers are the servers the multi-key tests run against: Debian's
// redis-server, and valkey 9.1 from linerate's server store (installed
// from the shared apt cache when missing; in CI a store that cannot be had
// fails the test, elsewhere it is skipped with the reason).
func multiServers(t *testing.T) map[string]func(t *testing.T) *labtest.Server {
	return map[string]func(t *testing.T) *labtest.Server{
		"redis": func(t *testing.T) *labtest.Server { return labtest.StartRedis(t) },
		"valkey": func(t *testing.T) *labtest.Server {
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			inst, err := serverstest.InstallValkey(ctx)
			if err != nil {
				if os.Getenv("CI") != "" {
					t.Fatalf("server store: valkey 9.1: %v", err)
				}
				t.Skipf("server store: valkey 9.1: %v", err)
			}
			return labtest.StartServer(t, inst.Server)
		},
	}
}

func multiWorkload(port int, cmd lab.Command) lab.Workload {
	return lab.Workload{
		Host: "127.0.0.1", Port: port, Connections: 2, Pipeline: 2, Threads: 1, Keyspace: 40,
		ValueSz: lab.OneSize(1 << 20), Warmup: lab.Duration(100 * time.Millisecond), Duration: lab.Duration(400 * time.Millisecond),
		Seed: 3, Command: cmd, KeysPerOp: 10,
	}
}

// MGET of 10 keys at 1 MiB, every value verified whole: the record's MGETs
// are the server's, each of 10 keys (the server's hits), payload the sum
// of the values, wire bytes the server's within 1 %. MSET writes values
// the MGETs then verify.
func TestMultiKeyAgainstServers(t *testing.T) {
	t.Parallel()
	for name, start := range multiServers(t) {
		t.Run(name, func(t *testing.T) {
			srv := start(t)
			ctx := context.Background()
			for _, tc := range []struct {
				cmd     lab.Command
				op      lab.Op
				prefill bool
			}{{lab.CommandMSet, lab.OpMSet, false}, {lab.CommandMGet, lab.OpMGet, true}, {lab.CommandMGet, lab.OpMGet, false}} {
				w := multiWorkload(srv.Port, tc.cmd)
				w.Prefill, w.Verify = tc.prefill, lab.VerifyFull
				ctl, err := control.Dial(ctx, w.Resolve())
				if err != nil {
					t.Fatal(err)
				}
				_, _ = ctl.Info(ctx, "stats") // the Info reply's own bytes come before the count
				ctl.Close()
				before := labtest.Info(t, srv.Addr, "stats")
				cmdsBefore := labtest.Info(t, srv.Addr, "commandstats")
				res, err := engine.Run(ctx, w, engine.Options{})
				if err != nil {
					t.Fatalf("%s: %v (errors %v)", tc.cmd, err, res.Errors)
				}
				after := labtest.Info(t, srv.Addr, "stats")
				cmds := labtest.Info(t, srv.Addr, "commandstats")
				o := res.Ops[tc.op]
				if o == nil || len(res.Ops) != 1 {
					t.Fatalf("%s: ops %v", tc.cmd, res.Ops)
				}
				if want := o.Ops * 10 << 20; o.PayloadBytes != want {
					t.Errorf("%s: payload %d bytes for %d requests of 10 MiB", tc.cmd, o.PayloadBytes, o.Ops)
				}
				if o.Misses != 0 || len(res.Errors) != 0 || res.Abandoned != 0 {
					t.Errorf("%s: misses %d errors %v abandoned %d (MSET wrote every key before the MGETs without prefill)", tc.cmd, o.Misses, res.Errors, res.Abandoned)
				}
				if tc.op == lab.OpMGet && (o.TTFB == nil || o.Verify.Checked != o.Ops) {
					t.Errorf("MGET: ttfb %v, verify %+v for %d requests", o.TTFB, o.Verify, o.Ops)
				}
				var sent, recvd, requests uint64
				for ph, p := range res.Phases {
					sent += p.WireSent
					recvd += p.WireRecvd
					if ph != lab.PhasePrefill {
						requests += p.Ops[tc.op]
					}
				}
				// A busy machine may end no request inside a short window;
				// the drain ends those begun in it, counted in its phase.
				if requests == 0 {
					t.Fatalf("%s: no request completed in any phase: %+v", tc.cmd, res.Phases)
				}
				cmd := string(tc.cmd)
				if got := cmdCalls(cmds, cmd) - cmdCalls(cmdsBefore, cmd); got != requests {
					t.Errorf("%s: client counted %d requests, server %d", tc.cmd, requests, got)
				}
				if tc.op == lab.OpMGet {
					hits := counter(t, after, "keyspace_hits") - counter(t, before, "keyspace_hits")
					if hits != float64(requests*10) {
						t.Errorf("MGET: %.0f keyspace hits for %d requests of 10 keys", hits, requests)
					}
				}
				in := counter(t, after, "total_net_input_bytes") - counter(t, before, "total_net_input_bytes")
				out := counter(t, after, "total_net_output_bytes") - counter(t, before, "total_net_output_bytes")
				// Within 1 %, or the few KiB of the run's control plane
				// (INFO, CONFIG GET, DBSIZE): an MSET's replies are
				// 5 bytes each.
				if !wireNear(sent, in, 16<<10) || !wireNear(recvd, out, 16<<10) {
					t.Errorf("%s: client sent %d received %d, server in %.0f out %.0f", tc.cmd, sent, recvd, in, out)
				}
			}
		})
	}
}

// One key overwritten at the wrong size behind the client's back: every
// MGET names it (the keyspace is the 10 keys of one request), and each
// reply is exactly one wrong_length error, not ten; the run's errors are
// the server's MGET calls. The same from a second connection mid-run: no
// more errors than MGETs, never a tenfold count.
func TestMGetOneWrongKeyIsOneError(t *testing.T) {
	t.Parallel()
	for name, start := range multiServers(t) {
		t.Run(name, func(t *testing.T) {
			srv := start(t)
			ctx := context.Background()
			for _, tc := range []struct {
				name    string
				verify  lab.Verify
				midRun  bool
				exactly bool
			}{
				{"before the run, header", lab.VerifyHeader, false, true},
				{"before the run, length only", lab.VerifyNone, false, true},
				{"mid-run", lab.VerifyHeader, true, false},
			} {
				t.Run(tc.name, func(t *testing.T) {
					w := multiWorkload(srv.Port, lab.CommandMGet)
					w.Keyspace, w.Verify, w.Warmup = 10, tc.verify, 0
					rw := w.Resolve()
					ctl, layout := dialLayout(t, rw)
					writeKeys(t, ctl, layout, rw, 10)
					short := layout.Full(3, 0)[:1000]
					tamper := func() {
						if err := ctl.Set(ctx, lab.KeyName(3, rw.KeySize), short); err != nil {
							t.Error(err)
						}
					}
					before := labtest.Info(t, srv.Addr, "commandstats")
					if tc.midRun {
						// Once the server has answered a few MGETs whole:
						// by the run's progress, not by a clock. The window
						// is long enough for that and many MGETs after it
						// on a loaded machine (at 1 s, a loaded run's
						// window ended before the tamper landed).
						w.Duration = lab.Duration(4 * time.Second)
						done := make(chan struct{})
						var polling sync.WaitGroup
						defer func() { close(done); polling.Wait() }() // no t call after the test
						polling.Add(1)
						go func() {
							defer polling.Done()
							for {
								select {
								case <-done:
									return
								case <-time.After(10 * time.Millisecond):
								}
								if cmdCalls(labtest.Info(t, srv.Addr, "commandstats"), "mget")-cmdCalls(before, "mget") >= 3 {
									tamper()
									return
								}
							}
						}()
					} else {
						// 3 s, so a freeze of the loaded machine cannot
						// hold the window wholly (in a 400 ms one make
						// test once saw no reply, hence no error, and a
						// completed run); one MGET at a time, as MGET is
						// closed loop only and the count is per reply.
						w.Duration, w.Connections, w.Pipeline = lab.Duration(3*time.Second), 1, 1
						tamper()
					}
					res, err := engine.Run(ctx, w, engine.Options{})
					if res == nil {
						t.Fatalf("run: %v", err)
					}
					calls := cmdCalls(labtest.Info(t, srv.Addr, "commandstats"), "mget") - cmdCalls(before, "mget")
					if err == nil || res.Stop.Reason != lab.StopErrors {
						t.Fatalf("stop %+v, err %v", res.Stop, err)
					}
					wrong := res.Errors[lab.ErrWrongLength]
					var total uint64
					for _, n := range res.Errors {
						total += n
					}
					if wrong == 0 || total != wrong {
						t.Fatalf("errors %v: want wrong_length only", res.Errors)
					}
					o := res.Ops[lab.OpMGet]
					switch {
					case tc.exactly && (wrong != calls || o.Ops != 0):
						t.Errorf("%d wrong_length errors for %d MGETs (%d counted good): want one per reply", wrong, calls, o.Ops)
					case !tc.exactly && (wrong > calls || o.Ops == 0):
						t.Errorf("%d wrong_length errors, %d good, for %d MGETs: want at most one per reply, good ones before the overwrite", wrong, o.Ops, calls)
					}
					if o.Verify.Failed != o.Errors[lab.ErrWrongLength] || o.Verify.Checked != o.Ops+o.Verify.Failed {
						t.Errorf("verify %+v, errors %v, %d good", o.Verify, o.Errors, o.Ops)
					}
					if o.PayloadBytes != o.Ops*10<<20 {
						t.Errorf("payload %d counts failed replies (%d good)", o.PayloadBytes, o.Ops)
					}
				})
			}
		})
	}
}

// dialLayout opens a control connection to w's server, closed when the
// test ends, and makes the layout of w's values.
func dialLayout(t *testing.T, w lab.Workload) (*control.Conn, *lab.ValueLayout) {
	t.Helper()
	ctl, err := control.Dial(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ctl.Close)
	return ctl, lab.NewValueLayout(int64(w.ValueSz.Max()), w.Seed)
}

// writeKeys writes keys 0..n-1 as the engine would.
func writeKeys(t *testing.T, ctl *control.Conn, layout *lab.ValueLayout, w lab.Workload, n uint32) {
	t.Helper()
	for k := uint32(0); k < n; k++ {
		if err := ctl.Set(context.Background(), lab.KeyName(k, w.KeySize), layout.Full(k, 0)); err != nil {
			t.Fatal(err)
		}
	}
}
