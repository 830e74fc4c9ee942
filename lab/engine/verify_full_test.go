package engine_test

import (
	"context"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/labtest"
)

// The linerate binary of this test's architecture benches a real server
// with GETs and SETs, every byte of every value checked (--verify full),
// and its record counts both with no error. make test runs this package's
// tests a second time for linux/arm64 under qemu-user (.ci/arm64): the
// Graviton build's wire format, value layout and socket calls against the
// same server, through the command line a user types.
func TestBenchVerifiesEveryByteOfGetAndSet(t *testing.T) {
	t.Parallel()
	res, arch := benchVerifyFull(t)
	for _, op := range []lab.Op{lab.OpGet, lab.OpSet} {
		o := res.Ops[op]
		if o == nil || o.Ops == 0 || o.PayloadBytes != o.Ops*(1<<20) {
			t.Fatalf("%s %s: %+v", arch, op, o)
		}
	}
	t.Logf("%s: GET %d, SET %d, every byte checked (discard %s, send %s)", arch, res.Ops[lab.OpGet].Ops, res.Ops[lab.OpSet].Ops, res.Engine.Discard, res.Engine.Send)
}

// Every --send mode's SET bodies reach the server intact: the prefill
// and the run's SETs write every key in that mode, and the run's GETs
// read every byte back (--verify full). On loopback MSG_ZEROCOPY
// completes with a copy (the kernel says so), but the code path, the
// completions read from the error queue and the pages they cover, is the
// one a NIC would take. The server is on this host, so auto copies and
// copy writes each request whole (a 1 MiB SET in one call, as much as
// the socket takes); the modes by reference go in 128 KiB calls.
func TestSendModesDeliverEveryByte(t *testing.T) {
	for _, tc := range []struct{ send, want, call string }{
		{"copy", "copy", "request"},
		{"splice", "splice", "128KiB"},
		{"zerocopy", "zerocopy", "128KiB"},
		{"auto", "copy", "request"},
	} {
		t.Run(tc.send, func(t *testing.T) {
			t.Parallel()
			if tc.send == "zerocopy" && labtest.Emulator() != "" {
				zerocopyRefused(t)
				return
			}
			res, arch := benchVerifyFull(t, "--send", tc.send)
			if res.Engine.Send != tc.want || res.Engine.SendCall != tc.call {
				t.Fatalf("%s: --send %s recorded engine.send %q, send_call %q; want %q, %q", arch, tc.send, res.Engine.Send, res.Engine.SendCall, tc.want, tc.call)
			}
			get, set := res.Ops[lab.OpGet], res.Ops[lab.OpSet]
			if get == nil || set == nil || get.Ops == 0 || set.Ops == 0 || get.Verify.Checked != get.Ops ||
				set.PayloadBytes != set.Ops*(1<<20) || get.PayloadBytes != get.Ops*(1<<20) {
				t.Fatalf("%s --send %s: GET %+v, SET %+v", arch, tc.send, get, set)
			}
		})
	}
}

// zerocopyRefused: qemu-user does not pass SO_ZEROCOPY on (every kernel
// since 4.14 takes it), so there an asked-for zerocopy run must fail at
// setup, saying why, rather than copy under the mode's name.
func zerocopyRefused(t *testing.T) {
	srv := labtest.StartRedis(t)
	out, err := exec.Command(labtest.Binary(t), "bench", "--quiet", "-p", strconv.Itoa(srv.Port), "-s", "1MiB", "-n", "4",
		"-r", "0:100", "-d", "1s", "--send", "zerocopy").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || !strings.Contains(string(out), "SO_ZEROCOPY") {
		t.Fatalf("--send zerocopy under %s: %v\n%s; want exit 3 naming SO_ZEROCOPY", labtest.Emulator(), err, out)
	}
}

// benchVerifyFull runs the binary against a server of its own: 1 MiB
// values, half GETs and half SETs, --verify full, extra flags added; it
// fails the test on any error in the record.
func benchVerifyFull(t *testing.T, extra ...string) (lab.Result, string) {
	t.Helper()
	bin := labtest.Binary(t)
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	arch := ""
	for _, s := range bi.Settings {
		if s.Key == "GOARCH" {
			arch = s.Value
		}
	}
	if arch != runtime.GOARCH {
		t.Fatalf("%s is built for %q; this test runs as %s", bin, arch, runtime.GOARCH)
	}
	srv := labtest.StartRedis(t)
	rec := filepath.Join(t.TempDir(), "r.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Paced at 20/s with a queue no freeze overflows: it checks every
	// byte of ~60 GETs and SETs, not speed; closed loop each run took
	// both CPUs for its window, and emulated each byte costs ten times.
	args := append([]string{"bench", "--quiet", "-p", strconv.Itoa(srv.Port), "-c", "2", "-t", "1",
		"-s", "1MiB", "-n", "8", "--prefill", "-r", "50:50", "--verify", "full", "--warmup", "200ms", "-d", freezeWindow.String(),
		"--rate", "20", "--queue-limit", labtest.PacedQueueLimit.String(), "--json", rec}, extra...)
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("linerate bench (%s): %v\n%s", arch, err, out)
	}
	b, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	var res lab.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Workload.Verify != lab.VerifyFull || len(res.Errors) != 0 || res.Abandoned != 0 {
		t.Fatalf("%s %v: verify %s, errors %v, %d abandoned", arch, extra, res.Workload.Verify, res.Errors, res.Abandoned)
	}
	return res, arch
}
