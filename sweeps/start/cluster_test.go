package start

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/infra/launch"
	"github.com/linerate/linerate/infra/servers/serverstest"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/bench"
	"github.com/linerate/linerate/lab/cluster"
	"github.com/linerate/linerate/lab/resp"
	"github.com/linerate/linerate/sweeps"
)

// server.cluster: 3 on loopback: the starter launches three store valkey
// nodes as one cluster, the bench routes by slot (--cluster), every 1 MiB
// GET is verified, and the environment names the nodes.
func TestRealCampaignCluster(t *testing.T) {
	t.Parallel()
	serverstest.Valkey(t) // into the default store the Starter opens
	p := plan(t, `name: cluster
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
  rate: 50
  warmup: 200ms
  duration: `+cellWindow+`
`, nil)
	dir := t.TempDir()
	run := runAll(t, p, dir, &Starter{}, bench.Bencher{})
	for _, rec := range run.Sorted() {
		res := rec.Result
		if !rec.Workload.Cluster || res.Cluster == nil || len(res.Cluster.Nodes) != 3 {
			t.Fatalf("%s: cluster %v, record %+v", rec.CellID, rec.Workload.Cluster, res.Cluster)
		}
		for _, n := range res.Cluster.Nodes {
			if n.Keys != 2 || n.Connections != 1 || n.Slots < 5000 {
				t.Errorf("%s: node %+v", rec.CellID, n)
			}
		}
		for kind, n := range res.Errors {
			if n > 0 {
				t.Errorf("%s: %d %s errors", rec.CellID, n, kind)
			}
		}
		if g := res.Ops[lab.OpGet]; g != nil && (g.Ops == 0 || g.Verify.Checked == 0 || g.Verify.Failed != 0 || g.Misses != 0) {
			t.Errorf("%s: GET %d ops, verify %+v, misses %d", rec.CellID, g.Ops, g.Verify, g.Misses)
		}
		if s := res.Ops[lab.OpSet]; s != nil && s.Ops == 0 {
			t.Errorf("%s: no SET completed", rec.CellID)
		}
	}
	if run.Env == nil || len(run.Env.Servers) != 1 || len(strings.Fields(run.Env.Servers[0].Info[infoClusterNodes])) != 3 {
		t.Fatalf("env servers %+v", run.Env.Servers)
	}
}

// FlushAll between cells empties every node of a cluster, not only the
// seed the bench is pointed at.
func TestClusterFlushAllEveryNode(t *testing.T) {
	t.Parallel()
	serverstest.Valkey(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pv := sweeps.PlanVersion{Spec: sweeps.VersionSpec{Store: "valkey@9.1", Runtime: "sid", Server: sweeps.ServerSettings{Cluster: 3}}, Segment: "v"}
	srv, err := (&Starter{}).Start(ctx, pv, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(context.Background())
	nodes := launch.Nodes(srv.(*running).srv)
	if len(nodes) != 3 {
		t.Fatalf("%d nodes", len(nodes))
	}
	conns := make([]*resp.Conn, len(nodes))
	for i, n := range nodes {
		if conns[i], err = resp.Dial(ctx, n.Addr(), resp.Options{}); err != nil {
			t.Fatal(err)
		}
		defer conns[i].Close()
		// A key in a slot of node i's range.
		key := fmt.Sprintf("{%s}k", cluster.Tag(cluster.Ranges(3)[i][0]))
		if _, err := conns[i].Do(ctx, "SET", key, "v"); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.FlushAll(ctx); err != nil {
		t.Fatal(err)
	}
	for i, c := range conns {
		if n, err := c.Integer(ctx, "DBSIZE"); err != nil || n != 0 {
			t.Errorf("node %d holds %d keys after FlushAll (%v)", i, n, err)
		}
	}
}
