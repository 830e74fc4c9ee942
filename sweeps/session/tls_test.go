package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/linerate/linerate/infra/sshhost"
	"github.com/linerate/linerate/infra/sshhost/sshtest"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/sweeps"
)

// tlsSpec is a server.tls campaign named name on provider: GET and SET of
// 1 MiB against one TLS-only server. No link calibration: it runs against
// the sink in plain TCP, whatever the server speaks, and at its default
// 10 s a run it took 44 of each test's 47-57 s.
func tlsSpec(bin, name, provider string) string {
	return `name: ` + name + `
provider: ` + provider + `
calibrate: false
versions:
  - {binary: ` + bin + `}
server: {tls: true, maxmemory: 256mb}
workload:
  ratio: [GET, SET]
  value-size: 1MiB
  connections: 2
  threads: 1
  keyspace: 4
  rate: 100
  warmup: 100ms
  duration: ` + cellWindow + `
`
}

// checkTLSRun fails unless both cells were measured over TLS to the
// server host's data address, and returns the CA files the benches read.
func checkTLSRun(t *testing.T, run *sweeps.Run) []string {
	t.Helper()
	if len(run.Sorted()) != 2 {
		t.Fatalf("%d cells, want GET and SET", len(run.Sorted()))
	}
	var cas []string
	for _, rec := range run.Sorted() {
		res := rec.Result
		if res == nil || !res.Workload.TLS.On || res.Workload.TLS.SNI != "198.18.0.1" || res.Engine.Discard != "tls" {
			t.Fatalf("%s: not measured over TLS: %+v", rec.CellID, res)
		}
		var ops uint64
		for _, o := range res.Ops {
			ops += o.Ops
		}
		if ops == 0 || len(res.Errors) != 0 || res.Stop.Reason != lab.StopCompleted {
			t.Errorf("%s: %d ops, errors %v, stop %+v", rec.CellID, ops, res.Errors, res.Stop)
		}
		cas = append(cas, res.Workload.TLS.CACert)
	}
	return cas
}

// A server.tls campaign on a netns pair: the server starts in the server
// namespace TLS-only with the run's certificates (kept with its log), and
// the bench in the client namespace reads that CA file as it is (the
// namespaces share this machine's files) and speaks TLS on every
// connection.
func TestTLSCampaignOnNetnsPair(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("network namespaces need root; CI runs as root")
		}
		t.Skip("network namespaces need root")
	}
	bin := redisBinary(t)
	dir := t.TempDir()
	s := open(t, parse(t, "e2e-tls.yaml", tlsSpec(bin, "e2e-tls", "{kind: netns, binary: "+labtest.Binary(t)+"}")), dir, Options{})
	for _, ca := range checkTLSRun(t, runAll(t, s)) {
		if !strings.HasPrefix(ca, dir) || !strings.HasSuffix(ca, "/tls/ca.crt") {
			t.Errorf("the bench read %s, not the run's CA beside the server's log", ca)
		}
	}
}

// The same campaign on an ssh pair: the agent on the server host starts
// the server and sends its CA back, which is kept in the run on this
// machine and copied to the client host for each bench (the copy removed
// after it).
func TestTLSCampaignOnSSHPair(t *testing.T) {
	t.Parallel()
	bin := redisBinary(t)
	l := sshtest.New(t, "e2e-tls-ssh")
	c := parse(t, "e2e-tls-ssh.yaml", tlsSpec(bin, "e2e-tls-ssh", "{kind: ssh, server: root@198.18.0.1:2222, client: root@198.18.0.2:2222, key: /nonexistent}"))
	prov := &sshhost.Provider{Server: sshConfig(t, l, l.Pair.Server, "server", ""), Client: sshConfig(t, l, l.Pair.Client, "client", "")}
	dir := t.TempDir()
	s := open(t, c, dir, Options{Provider: prov})
	cas := checkTLSRun(t, runAll(t, s))
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The CA the agent sent back is the run's: kept in its directory,
	// where a kill -9 of this process leaves nothing outside the run.
	kept, _ := filepath.Glob(filepath.Join(dir, sweeps.LogsDir, "tls", "*.crt"))
	if len(kept) != 1 {
		t.Errorf("CA files kept in the run: %v, want one", kept)
	}
	for _, f := range kept {
		if pem, err := os.ReadFile(f); err != nil || !strings.HasPrefix(string(pem), "-----BEGIN CERTIFICATE-----") {
			t.Errorf("%s: %v, %.40q; want the CA certificate", f, err, pem)
		}
	}
	for _, ca := range cas {
		// The record names the copy on the client host, whose name says
		// it is the run's; HostBencher removed it after its bench.
		if !strings.HasPrefix(ca, "/tmp/linerate-ca-") {
			t.Errorf("the bench read %s, not a copy HostBencher made", ca)
		}
		if _, err := os.Stat(ca); err == nil {
			t.Errorf("%s still there after the run", ca)
		}
	}
}
