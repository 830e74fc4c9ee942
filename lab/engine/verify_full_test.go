package engine_test

import (
	"context"
	"debug/buildinfo"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
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
	out, err := exec.CommandContext(ctx, bin, "bench", "--quiet", "-p", strconv.Itoa(srv.Port), "-c", "2", "-t", "1",
		"-s", "1MiB", "-n", "8", "--prefill", "-r", "50:50", "--verify", "full", "--warmup", "200ms", "-d", "1s", "--json", rec).CombinedOutput()
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
		t.Fatalf("%s: verify %s, errors %v, %d abandoned", arch, res.Workload.Verify, res.Errors, res.Abandoned)
	}
	for _, op := range []lab.Op{lab.OpGet, lab.OpSet} {
		o := res.Ops[op]
		if o == nil || o.Ops == 0 || o.PayloadBytes != o.Ops*(1<<20) {
			t.Fatalf("%s %s: %+v", arch, op, o)
		}
	}
	t.Logf("%s: GET %d, SET %d, every byte checked (discard %s)", arch, res.Ops[lab.OpGet].Ops, res.Ops[lab.OpSet].Ops, res.Engine.Discard)
}
