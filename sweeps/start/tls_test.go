package start

import (
	"testing"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/bench"
)

// A campaign whose server serves TLS only (server.tls) plans and runs:
// the launcher makes the run's certificates, the bench gets the run's CA
// and speaks TLS on every connection, and the records say so (env.json's
// server too).
func TestRealTLSCampaign(t *testing.T) {
	t.Parallel()
	bin := redisBinary(t)
	src := `name: tls
versions:
  - {binary: ` + bin + `}
server: {tls: true}
workload:
  ratio: [GET, SET]
  value-size: 1MiB
  connections: 2
  threads: 1
  keyspace: 4
  rate: 50
  warmup: 200ms
  duration: ` + cellWindow + `
`
	p := plan(t, src, nil)
	run := runAll(t, p, t.TempDir(), &Starter{}, bench.Bencher{})
	if len(run.Sorted()) != 2 {
		t.Fatalf("%d cells, want GET and SET", len(run.Sorted()))
	}
	if len(run.Env.Servers) != 1 || !run.Env.Servers[0].TLS {
		t.Errorf("env.json does not say the server served TLS: %+v", run.Env.Servers)
	}
	for _, rec := range run.Sorted() {
		res := rec.Result
		if res == nil || !res.Workload.TLS.On || res.Workload.TLS.CACert == "" || res.Engine.Discard != "tls" {
			t.Fatalf("%s: not measured over TLS: %+v", rec.CellID, res)
		}
		var ops uint64
		for _, o := range res.Ops {
			ops += o.Ops
		}
		if ops == 0 || len(res.Errors) != 0 || res.Stop.Reason != lab.StopCompleted {
			t.Errorf("%s: %d ops, errors %v, stop %+v", rec.CellID, ops, res.Errors, res.Stop)
		}
	}
}
