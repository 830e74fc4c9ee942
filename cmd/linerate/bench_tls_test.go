package main

import (
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/exitcode"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/lab/tlsgen"
)

// bench --tls against a TLS-only server, as an operator runs it: with the
// CA that signed the server's certificate the run completes over TLS; with
// another CA it is a setup failure, exit 3, one line naming the
// certificate problem, and the record still says why it stopped.
func TestBenchTLSWrongCAExits3(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string) tlsgen.Files {
		b, err := tlsgen.Generate(tlsgen.Options{IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
		if err != nil {
			t.Fatal(err)
		}
		f, err := b.Write(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	good, other := write("good"), write("other")
	srv := labtest.StartServerWith(t, labtest.Need(t, "redis-server"), nil, func(port int) []string { return good.ServerArgs(port, false) })
	args := func(ca, rec string) []string {
		return []string{"bench", "--quiet", "-p", strconv.Itoa(srv.Port), "--tls", "--cacert", ca, "-c", "2", "-t", "1",
			"-s", "1MiB", "-n", "4", "--prefill", "-r", "50:50", "--rate", "50", "--warmup", "200ms", "-d", benchWindow, "--json", rec}
	}

	rec := filepath.Join(dir, "ok.json")
	if code, out, stderr := linerate(t, "", "", args(good.CA, rec)...); code != 0 {
		t.Fatalf("with the server's CA: exit %d: %s%s", code, out, stderr)
	}
	res := mustRead(t, rec)
	if !res.Workload.TLS.On || res.Engine.Discard != "tls" || res.Ops[lab.OpGet] == nil || res.Ops[lab.OpGet].Ops == 0 {
		t.Errorf("with the server's CA: tls %+v, discard %q, ops %+v", res.Workload.TLS, res.Engine.Discard, res.Ops)
	}

	rec = filepath.Join(dir, "wrong.json")
	code, out, stderr := linerate(t, "", "", args(other.CA, rec)...)
	if code != exitcode.SetupFailed || out != "" || strings.Count(strings.TrimSpace(stderr), "\n") != 0 ||
		!strings.HasPrefix(stderr, "linerate bench: setup_failed: ") || !strings.Contains(stderr, "certificate signed by unknown authority") {
		t.Errorf("with another CA: exit %d, stdout %q, stderr %q; want 3 and one line naming the unknown authority", code, out, stderr)
	}
	if res := mustRead(t, rec); res.Stop.Reason != lab.StopSetupFailed || res.Stop.ExitCode != exitcode.SetupFailed {
		t.Errorf("with another CA: the record stops with %+v", res.Stop)
	}
}

func mustRead(t *testing.T, path string) *lab.Result {
	t.Helper()
	r, err := lab.ReadResult(path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
