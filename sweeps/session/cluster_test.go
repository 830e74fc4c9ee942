package session

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/linerate/linerate/infra/servers/serverstest"
	"github.com/linerate/linerate/infra/sshhost/sshtest"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/sweeps/hostmetrics"
)

// server.cluster on the netns provider: three store valkey nodes start in
// the server namespace at 198.18.0.1 and form one cluster there (ports
// and MEET inside that namespace); linerate bench --cluster runs in the
// client namespace and reaches every node by the addresses CLUSTER SLOTS
// gives.
func TestRealClusterCampaignOnNetnsPair(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("network namespaces need root; CI runs as root")
		}
		t.Skip("network namespaces need root")
	}
	serverstest.Valkey(t)
	lr := labtest.Binary(t)
	c := parse(t, "cluster-netns.yaml", `name: cluster-netns
provider: {kind: netns, binary: `+lr+`}
calibrate: false
versions:
  - {store: valkey@9.1, runtime: sid}
server:
  cluster: 3
  maxmemory: 256mb
workload:
  ratio: [SET, GET]
  value-size: 1MiB
  connections: 3
  threads: 1
  keyspace: 6
  warmup: 100ms
  duration: `+cellWindow+`
`)
	s := open(t, c, t.TempDir(), Options{})
	// Closed loop (the nodes' main threads must work) through a shaped
	// link: the windows move real bytes without taking both CPUs. No
	// calibration, so no cell's limit is the link's.
	srvNS, cliNS := netnsPair(t, s)
	sshtest.Shape(t, srvNS, cliNS)
	run := runAll(t, s)
	for _, rec := range run.Sorted() {
		res := rec.Result
		if res.Workload.Host != "198.18.0.1" || !res.Workload.Cluster || res.Cluster == nil || len(res.Cluster.Nodes) != 3 {
			t.Fatalf("%s: host %s, cluster %+v", rec.CellID, res.Workload.Host, res.Cluster)
		}
		for _, n := range res.Cluster.Nodes {
			if !strings.HasPrefix(n.Addr, "198.18.0.1:") || n.Connections != 1 || n.Keys != 2 {
				t.Errorf("%s: node %+v", rec.CellID, n)
			}
		}
		for kind, n := range res.Errors {
			if n > 0 {
				t.Errorf("%s: %d %s errors", rec.CellID, n, kind)
			}
		}
		if g := res.Ops[lab.OpGet]; g != nil && (g.Ops == 0 || g.Verify.Checked == 0 || g.Verify.Failed != 0) {
			t.Errorf("%s: GET %+v", rec.CellID, g.Verify)
		}
		// Every node's process is sampled, not the seed's alone, and
		// together their main threads worked. (One node may get no CPU
		// tick in a short window on a busy machine: busy-ness per node
		// is the machine's to say.)
		procs := rec.Host.Processes()
		pids := map[int]bool{}
		var busy float64
		for _, p := range procs {
			pids[p.PID] = true
			busy += p.MainBusy
			if p.PID <= 0 || len(p.Threads) == 0 {
				t.Errorf("%s: node process %+v", rec.CellID, p)
			}
		}
		if busy <= 0 {
			t.Errorf("%s: no node's main thread worked: %+v", rec.CellID, procs)
		}
		if len(procs) != 3 || len(pids) != 3 {
			t.Errorf("%s: %d server processes sampled (%d PIDs), want the 3 nodes", rec.CellID, len(procs), len(pids))
		}
		if rec.Limit == nil || (rec.Limit.Kind != hostmetrics.LimitClient && !strings.Contains(rec.Limit.Detail, "busiest of 3")) {
			t.Errorf("%s: limit %+v does not name the node it judged", rec.CellID, rec.Limit)
		} else {
			t.Logf("%s: limit %s: %s", rec.CellID, rec.Limit.Kind, rec.Limit.Detail)
		}
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
