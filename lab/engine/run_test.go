package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/control"
	"github.com/linerate/linerate/lab/engine"
	"github.com/linerate/linerate/lab/exitcode"
	"github.com/linerate/linerate/lab/labtest"
)

// freezeWindow is the measured window of the runs here whose test needs
// requests sent and completed in it: make test was seen to freeze a
// process for 1-2.5 s, which a shorter window can lie wholly inside.
const freezeWindow = lab.Duration(3 * time.Second)

// pacedWindow is w over a freezeWindow at rate requests a second, with a
// queue no freeze overflows: for a test that needs requests completed in
// its window but not the machine's speed, which closed loop would spend
// both CPUs on for 3 s.
func pacedWindow(w lab.Workload, rate float64) lab.Workload {
	w.Duration, w.Rate, w.QueueLimit = freezeWindow, lab.Rate{PerSec: rate}, lab.Duration(labtest.PacedQueueLimit)
	return w
}

func shortWorkload(port int) lab.Workload {
	return lab.Workload{
		Host: "127.0.0.1", Port: port, Connections: 4, Threads: 2, Keyspace: 16,
		ValueSz: lab.OneSize(256 << 10), Warmup: lab.Duration(200 * time.Millisecond), Duration: freezeWindow,
		Seed: 7,
	}
}

func counter(t *testing.T, m map[string]string, k string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(m[k], 64)
	if err != nil {
		t.Fatalf("INFO field %s = %q", k, m[k])
	}
	return v
}

// infoDrift is how far the server's byte counters may stray from the
// client's after the control plane's bytes are taken off: that cost is
// measured once, but the INFO replies that read the counters change length
// as their figures (instantaneous_*_kbps, the byte counters themselves)
// gain or lose digits. A SET run's replies are 5 bytes each, so 1 % of
// them can be smaller than that drift (240 vs 236 bytes failed a CI run).
const infoDrift = 64

// wireNear says whether a client's byte count and the server's agree:
// within 1 %, or within slack bytes the test cannot attribute.
func wireNear(client uint64, server, slack float64) bool {
	d := math.Abs(float64(client) - server)
	return server > 0 && (d <= 0.01*server || d <= slack)
}

// cmdCalls reads calls=N from a commandstats line.
func cmdCalls(m map[string]string, cmd string) uint64 {
	for _, f := range strings.Split(m["cmdstat_"+cmd], ",") {
		if v, ok := strings.CutPrefix(f, "calls="); ok {
			n, _ := strconv.ParseUint(v, 10, 64)
			return n
		}
	}
	return 0
}

// The client's own counts must agree with the server's: wire bytes within
// 1 %, requests exactly.
//
// Not parallel: its page-fault check reads the test process's own count,
// which the tests running beside a parallel one would add to (11,822
// faults for 2,514 requests once, all of them other tests').
func TestCountsMatchServer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ratio   lab.Ratio
		prefill bool
	}{
		{"GET", lab.Ratio{Gets: 100}, true},
		{"SET", lab.Ratio{Sets: 100}, false},
		{"mix", lab.Ratio{Gets: 70, Sets: 30}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := labtest.StartRedis(t)
			// Paced: it matches counts, not throughput. 1000/s keeps
			// ~3000 requests in the window for the page-fault bound (a
			// loaded make test's closed loop once made 2,514); closed
			// loop took both CPUs for the window.
			w := pacedWindow(shortWorkload(srv.Port), 1000)
			w.Ratio, w.Prefill = tc.ratio, tc.prefill
			// What the control plane costs (PING, INFO, CONFIG GET) is
			// measured on its own first and taken off: the data plane's
			// bytes are what linerate counts.
			base0 := labtest.Info(t, srv.Addr, "stats")
			ctl, err := control.Dial(context.Background(), w.Resolve())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ctl.ServerInfo(context.Background()); err != nil {
				t.Fatal(err)
			}
			if tc.prefill {
				_, _ = ctl.DBSize(context.Background())
			}
			ctl.Close()
			before := labtest.Info(t, srv.Addr, "stats")
			ctlIn := counter(t, before, "total_net_input_bytes") - counter(t, base0, "total_net_input_bytes")
			ctlOut := counter(t, before, "total_net_output_bytes") - counter(t, base0, "total_net_output_bytes")
			var phases []lab.Phase
			res, err := engine.Run(context.Background(), w, engine.Options{OnPhase: func(p lab.Phase) { phases = append(phases, p) }})
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if fmt.Sprint(phases) != "[warmup measure drain]" {
				t.Errorf("window marks %v", phases)
			}
			after := labtest.Info(t, srv.Addr, "stats")
			cmds := labtest.Info(t, srv.Addr, "commandstats")

			var sent, recvd uint64
			ops := map[lab.Op]uint64{}
			for _, p := range res.Phases {
				sent += p.WireSent
				recvd += p.WireRecvd
				for op, n := range p.Ops {
					ops[op] += n
				}
			}
			if res.Abandoned != 0 {
				t.Fatalf("%d requests abandoned; the counts cannot be compared", res.Abandoned)
			}
			in := counter(t, after, "total_net_input_bytes") - counter(t, before, "total_net_input_bytes") - ctlIn
			out := counter(t, after, "total_net_output_bytes") - counter(t, before, "total_net_output_bytes") - ctlOut
			for _, c := range []struct {
				what        string
				client, srv float64
			}{{"bytes client sent vs server input", float64(sent), in}, {"bytes client received vs server output", float64(recvd), out}} {
				if !wireNear(uint64(c.client), c.srv, infoDrift) {
					t.Errorf("%s: %.0f vs %.0f (more than 1%% and %d bytes apart)", c.what, c.client, c.srv, infoDrift)
				}
			}
			if got, want := ops[lab.OpGet], cmdCalls(cmds, "get"); got != want {
				t.Errorf("GET: client counted %d, server %d", got, want)
			}
			if got, want := ops[lab.OpSet], cmdCalls(cmds, "set"); got != want {
				t.Errorf("SET: client counted %d, server %d", got, want)
			}
			for _, op := range w.Resolve().Ops() {
				o := res.Ops[op]
				if o == nil || o.Ops == 0 || o.Gbps <= 0 {
					t.Fatalf("%s: nothing measured: %+v", op, o)
				}
				if o.Latency.Count != int64(o.Ops) {
					t.Errorf("%s: %d latencies for %d ops", op, o.Latency.Count, o.Ops)
				}
				var series uint64
				for _, s := range o.Series {
					series += s.PayloadBytes
					// A second's p99 comes from ~9%-wide buckets. (How it
					// compares with the window's p50 is the machine's: a
					// stall in one second moves the p50 past another's p99.)
					if s.Ops > 0 && (s.P99 <= 0 || s.P99 > o.Latency.Max*1.1) {
						t.Errorf("%s second %d: p99 %.0fus against window p50 %.0fus max %.0fus", op, s.Second, s.P99, o.Latency.P50, o.Latency.Max)
					}
				}
				if series != o.PayloadBytes {
					t.Errorf("%s: per-second series holds %d bytes, total %d", op, series, o.PayloadBytes)
				}
			}
			if len(res.Errors) != 0 {
				t.Errorf("errors on a healthy server: %v", res.Errors)
			}
			// The record must show the client did not fault in memory per
			// request: a 256 KiB value read into fresh memory is 64 faults
			// a request. The runtime's own faults in a window (timers, a
			// GC, a stack) are a few hundred whatever the request count,
			// so they are allowed apart. Under an emulator
			// the count is the translator's too; the allocation tests
			// judge the code there.
			var done uint64
			for _, o := range res.Ops {
				done += o.Ops
			}
			const runtimeFaults = 1000
			if f := uint64(res.Client.MinorFaults); f > done+runtimeFaults && labtest.Emulator() == "" {
				t.Errorf("client took %d minor faults for %d requests (%.1f each): more than one a request beside the runtime's %d",
					f, done, res.Client.MinorFaultsPerOp, runtimeFaults)
			} else {
				t.Logf("%d minor faults for %d requests (emulator %q)", f, done, labtest.Emulator())
			}
			if res.Stop.Reason != lab.StopCompleted || res.Stop.ExitCode != 0 {
				t.Errorf("stop = %+v", res.Stop)
			}
		})
	}
}

// A value overwritten behind the client's back is an error, never throughput.
func TestVerifyCatchesTampering(t *testing.T) {
	t.Parallel()
	srv := labtest.StartRedis(t)
	ctx := context.Background()
	// 20/s: ~60 GETs of 4 keys a run, the tampered key's ~15 enough to
	// catch; at 100/s each emulated run verified 5 times the bytes.
	w := pacedWindow(shortWorkload(srv.Port), 20)
	w.Keyspace, w.Warmup = 4, 0
	rw := w.Resolve()
	ctl, layout := dialLayout(t, rw)
	fill := func() { writeKeys(t, ctl, layout, rw, 4) }
	body := func() []byte { // right size, ends intact, one body byte wrong
		v := layout.Full(2, 0)
		v[len(v)/2] ^= 0xff
		return v
	}
	cases := []struct {
		name   string
		verify lab.Verify
		tamper map[uint32][]byte
		want   lab.ErrorKind
		caught bool
	}{
		{"short value", lab.VerifyHeader, map[uint32][]byte{1: layout.Full(1, 0)[:1000]}, lab.ErrWrongLength, true},
		{"another key's value", lab.VerifyHeader, map[uint32][]byte{1: layout.Full(3, 0)}, lab.ErrBadContent, true},
		{"length only still checks length", lab.VerifyNone, map[uint32][]byte{1: append(layout.Full(1, 0), 'x')}, lab.ErrWrongLength, true},
		{"body byte, header mode", lab.VerifyHeader, map[uint32][]byte{2: body()}, lab.ErrBadContent, false},
		{"body byte, full mode", lab.VerifyFull, map[uint32][]byte{2: body()}, lab.ErrBadContent, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fill()
			for k, v := range tc.tamper {
				if err := ctl.Set(ctx, lab.KeyName(k, rw.KeySize), v); err != nil {
					t.Fatal(err)
				}
			}
			w := w
			w.Verify = tc.verify
			res, err := engine.Run(ctx, w, engine.Options{})
			got := res.Errors[tc.want]
			if !tc.caught {
				if got != 0 || err != nil {
					t.Fatalf("header mode is documented not to read the body, yet reported %v (%v)", res.Errors, err)
				}
				return
			}
			if got == 0 {
				t.Fatalf("tampered key not reported as %s: errors %v", tc.want, res.Errors)
			}
			var re *engine.RunError
			if err == nil || res.Stop.Reason != lab.StopErrors || res.Stop.ExitCode != exitcode.Errors {
				t.Fatalf("stop = %+v, err %v (%T)", res.Stop, err, re)
			}
			g := res.Ops[lab.OpGet]
			if g.Verify.Failed == 0 || g.Verify.Checked != g.Ops+g.Verify.Failed {
				t.Errorf("verify counts %+v with %d good ops", g.Verify, g.Ops)
			}
			if g.PayloadBytes != g.Ops*uint64(layout.Size) {
				t.Errorf("payload %d counts failed replies (ops %d)", g.PayloadBytes, g.Ops)
			}
		})
	}
}

// A GET of a key never written is a miss without prefill, an error with it.
func TestMissesWithoutPrefill(t *testing.T) {
	t.Parallel()
	srv := labtest.StartRedis(t)
	w := pacedWindow(shortWorkload(srv.Port), 100)
	w.Warmup = 0
	res, err := engine.Run(context.Background(), w, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := res.Ops[lab.OpGet]
	if g.Misses == 0 || g.Ops != 0 || g.PayloadBytes != 0 {
		t.Fatalf("empty server: misses %d ops %d bytes %d", g.Misses, g.Ops, g.PayloadBytes)
	}
}

func TestEnginesAgree(t *testing.T) {
	t.Parallel()
	srv := labtest.StartRedis(t)
	for _, name := range []string{lab.EngineRaw, lab.EngineValkeyGo} {
		// Paced: it checks what each engine reads of the other's writes,
		// not speed; closed loop took both CPUs for each window.
		w := pacedWindow(shortWorkload(srv.Port), 100)
		w.Ratio, w.Prefill, w.Engine, w.Verify = lab.Ratio{Gets: 50, Sets: 50}, true, name, lab.VerifyFull
		res, err := engine.Run(context.Background(), w, engine.Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, op := range []lab.Op{lab.OpGet, lab.OpSet} {
			if res.Ops[op].Ops == 0 {
				t.Errorf("%s: no %s completed", name, op)
			}
		}
		if res.Ops[lab.OpGet].Verify.Failed != 0 {
			t.Errorf("%s: %d verify failures on values the other engine wrote", name, res.Ops[lab.OpGet].Verify.Failed)
		}
	}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	srv := labtest.StartRedis(t, "--requirepass", "s3cret")
	w := shortWorkload(srv.Port)
	w.Duration, w.Warmup = lab.Duration(300*time.Millisecond), 0
	w.Ratio, w.Password = lab.Ratio{Sets: 1}, "s3cret"
	if _, err := engine.Run(context.Background(), w, engine.Options{}); err != nil {
		t.Fatalf("right password: %v", err)
	}
	w.Password = "wrong"
	res, err := engine.Run(context.Background(), w, engine.Options{})
	if err == nil || res.Stop.Reason != lab.StopSetupFailed {
		t.Fatalf("wrong password: err %v stop %+v", err, res.Stop)
	}
}

func TestValueLargerThanProtoMaxBulkLen(t *testing.T) {
	t.Parallel()
	srv := labtest.StartRedis(t, "--proto-max-bulk-len", "1048576")
	w := shortWorkload(srv.Port)
	w.ValueSz = lab.OneSize(2 << 20)
	res, err := engine.Run(context.Background(), w, engine.Options{})
	if err == nil || !strings.Contains(err.Error(), "proto-max-bulk-len") {
		t.Fatalf("want a proto-max-bulk-len error before sending, got %v", err)
	}
	if res == nil || res.Stop.ExitCode != exitcode.SetupFailed {
		t.Fatalf("record: %+v", res)
	}
}

// CLI-level faults: the exit code says what happened and the JSON record is
// written anyway.
func TestCLIFaults(t *testing.T) {
	t.Parallel()
	bin := labtest.Binary(t)
	// start starts a bench; run's finish waits for it and reads its record.
	start := func(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer, string) {
		t.Helper()
		out := filepath.Join(t.TempDir(), "r.json")
		cmd := exec.Command(bin, append(append([]string{"bench", "--quiet"}, args...), "--json", out)...)
		var b bytes.Buffer
		cmd.Stdout, cmd.Stderr = &b, &b
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &b, out
	}
	finish := func(t *testing.T, cmd *exec.Cmd, b *bytes.Buffer, out string) (int, string, *lab.Result) {
		t.Helper()
		_ = cmd.Wait()
		var res *lab.Result
		if data, err := os.ReadFile(out); err == nil {
			res = &lab.Result{}
			if err := json.Unmarshal(data, res); err != nil {
				t.Fatalf("record is not JSON: %v", err)
			}
		}
		return cmd.ProcessState.ExitCode(), b.String(), res
	}
	run := func(t *testing.T, args ...string) (int, string, *lab.Result) {
		t.Helper()
		cmd, b, out := start(t, args...)
		return finish(t, cmd, b, out)
	}

	t.Run("bad size names the flag and the forms", func(t *testing.T) {
		code, out, _ := run(t, "-s", "8XB")
		if code != exitcode.Usage || !strings.Contains(out, "value-size") || !strings.Contains(out, "MiB") {
			t.Fatalf("exit %d: %s", code, out)
		}
	})
	t.Run("the study's command line runs as written or names the missing CPUs", func(t *testing.T) {
		srv := labtest.StartRedis(t)
		args := strings.Fields("-h 127.0.0.1 -c 32 -P 1 -t 16 --cpu-list 4-19 -n 500 -r 100:0 --prefill --warmup 5s -d 15s -s 1048576 --key-size 16")
		args = append(args, "-p", strconv.Itoa(srv.Port))
		if n := countCPUs(); n >= 20 {
			t.Skipf("this host has CPUs 4-19 (%d CPUs): the run would take 20 s", n)
		}
		code, out, res := run(t, args...)
		if code != exitcode.Usage || !strings.Contains(out, "--cpu-list") || !strings.Contains(out, "not available") {
			t.Fatalf("exit %d: %s", code, out)
		}
		if res != nil {
			t.Fatalf("a refused run must not leave a record")
		}
	})
	t.Run("unreachable server", func(t *testing.T) {
		code, out, res := run(t, "-p", strconv.Itoa(labtest.FreePort(t)), "-d", "1s")
		if code != exitcode.SetupFailed || res == nil || res.Stop.Reason != lab.StopSetupFailed || !strings.Contains(out, "127.0.0.1") {
			t.Fatalf("exit %d, record %+v: %s", code, res, out)
		}
	})
	t.Run("server killed mid-run", func(t *testing.T) {
		srv := labtest.StartRedis(t)
		cmd, b, rec := start(t, "-p", strconv.Itoa(srv.Port), "-c", "4", "-t", "2", "-s", "256KiB", "-r", "0:100", "-d", "10s")
		defer func() { _ = cmd.Process.Kill() }()
		labtest.WaitForCalls(t, srv.Addr, "set", 20, time.Minute) // mid-run: some SETs measured
		srv.Kill()
		code, out, res := finish(t, cmd, b, rec)
		if code != exitcode.ServerLost || res == nil || res.Stop.Reason != lab.StopServerLost {
			t.Fatalf("exit %d: %s", code, out)
		}
		if res.Ops[lab.OpSet].Ops == 0 {
			t.Errorf("what was measured before the server died is lost")
		}
		if res.Window.Measured.D() >= 9*time.Second {
			t.Errorf("window %s: the run did not end when the server died", res.Window.Measured)
		}
	})
	t.Run("Ctrl-C stops cleanly and writes the record", func(t *testing.T) {
		srv := labtest.StartRedis(t)
		out := filepath.Join(t.TempDir(), "r.json")
		cmd := exec.Command(bin, "bench", "--quiet", "-p", strconv.Itoa(srv.Port), "-c", "4", "-t", "2", "-s", "256KiB",
			"-r", "0:100", "-d", "30s", "--json", out)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		labtest.WaitForCalls(t, srv.Addr, "set", 20, time.Minute) // mid-run: some SETs measured
		_ = cmd.Process.Signal(syscall.SIGINT)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		// Whether it stopped for the signal is the exit code and the
		// record's stop reason (it would complete its 30 s otherwise);
		// the bound only ends a hang.
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			_ = cmd.Process.Kill()
			t.Fatal("bench did not end within 2 minutes of SIGINT (its window is 30 s)")
		}
		if code := cmd.ProcessState.ExitCode(); code != exitcode.Interrupted {
			t.Fatalf("exit %d", code)
		}
		var res lab.Result
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &res); err != nil || res.Stop.Reason != lab.StopInterrupted || res.Ops[lab.OpSet].Ops == 0 {
			t.Fatalf("record after Ctrl-C: %v %+v", err, res.Stop)
		}
	})
}

func countCPUs() int {
	b, err := os.ReadFile("/sys/fs/cgroup/cpuset.cpus.effective")
	if err == nil {
		if l, err := lab.ParseCPUList(strings.TrimSpace(string(b))); err == nil && len(l) > 0 {
			return len(l)
		}
	}
	n := 0
	entries, _ := filepath.Glob("/sys/devices/system/cpu/cpu[0-9]*")
	n = len(entries)
	return n
}
