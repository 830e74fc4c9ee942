package engine_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/linerate/linerate/infra/servers/serverstest"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/cluster"
	"github.com/linerate/linerate/lab/engine"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/lab/resp"
)

// clusterWorkload is 1 MiB GETs and SETs over a cluster of 3, seeded at
// its first node, 10 keys per node, at rate a second over the freeze
// window: the tests judge routing, redirects and keys, not speed, and
// closed loop took both CPUs for the window.
func clusterWorkload(port int, rate float64) lab.Workload {
	return pacedWindow(lab.Workload{
		Host: "127.0.0.1", Port: port, Connections: 6, Threads: 2, Keyspace: 30,
		ValueSz: lab.OneSize(1 << 20), Ratio: lab.Ratio{Gets: 1, Sets: 1}, Prefill: true,
		Warmup: lab.Duration(300 * time.Millisecond),
		Verify: lab.VerifyFull, Seed: 5, Cluster: true,
	}, rate)
}

func dialAll(t *testing.T, ctx context.Context, servers []*labtest.Server) []*resp.Conn {
	t.Helper()
	conns := make([]*resp.Conn, len(servers))
	for i, s := range servers {
		c, err := resp.Dial(ctx, s.Addr, resp.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		conns[i] = c
	}
	return conns
}

// checkClean fails the test on any error, verification failure or
// abandoned request of a run.
func checkClean(t *testing.T, res *lab.Result, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	for kind, n := range res.Errors {
		if n > 0 {
			t.Errorf("%d %s errors", n, kind)
		}
	}
	for _, op := range []lab.Op{lab.OpGet, lab.OpSet} {
		or := res.Ops[op]
		if or == nil || or.Ops == 0 {
			t.Fatalf("no %s completed in the window", op)
		}
		if or.Redirects == nil {
			t.Errorf("%s: no redirect counts in a cluster run", op)
		}
	}
	if g := res.Ops[lab.OpGet]; g.Verify.Checked == 0 || g.Verify.Failed != 0 || g.Misses != 0 {
		t.Errorf("GET verify %+v, misses %d", g.Verify, g.Misses)
	}
}

// 1 MiB GETs and SETs over a cluster of 3: each node is asked only for
// its own keys (no redirect), every key was written to the node that
// serves its slot, and the nodes hold even shares.
func TestClusterGetSet(t *testing.T) {
	t.Parallel()
	servers := labtest.StartCluster(t, serverstest.Valkey(t).Server, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// 20/s: 60 requests spread over the nodes; each byte is verified,
	// ten times the cost under qemu-user, where this test runs too.
	w := clusterWorkload(servers[0].Port, 20)
	res, err := engine.Run(ctx, w, engine.Options{})
	checkClean(t, res, err)
	if res.Cluster == nil || len(res.Cluster.Nodes) != 3 {
		t.Fatalf("cluster record %+v", res.Cluster)
	}
	if res.Cluster.Moved != 0 || res.Cluster.Ask != 0 {
		t.Errorf("redirects in a steady cluster: %+v", res.Cluster)
	}
	for i, c := range dialAll(t, ctx, servers) {
		n, err := c.Integer(ctx, "DBSIZE")
		if err != nil || n != int64(w.Keyspace/3) {
			t.Errorf("node %s holds %d keys (%v), want %d", servers[i].Addr, n, err, w.Keyspace/3)
		}
		if got := res.Cluster.Nodes; got[i].Keys != w.Keyspace/3 || got[i].Connections != 2 {
			t.Errorf("node %d in the record: %+v", i, got[i])
		}
	}
}

// A slot moved mid-window (IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE)
// sends the engine MOVED (and ASK while it migrates): each is followed at
// the named node and counted, and no request fails.
func TestClusterReshardMidRun(t *testing.T) {
	t.Parallel()
	servers := labtest.StartCluster(t, serverstest.Valkey(t).Server, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conns := dialAll(t, ctx, servers)
	// 60/s: 10 a second at slot 0's key, a MOVED soon after the move.
	w := clusterWorkload(servers[0].Port, 60)
	w.Keyspace = 6 // node 0 holds keys 0 and 3, in its first two slots: both are hit often
	moved := make(chan error, 1)
	opt := engine.Options{OnPhase: func(p lab.Phase) {
		if p == lab.PhaseMeasure {
			go func() { moved <- cluster.MoveSlot(ctx, 0, conns[0], conns[1], 300*time.Millisecond) }()
		}
	}}
	res, err := engine.Run(ctx, w, opt)
	if merr := <-moved; merr != nil {
		t.Fatalf("move slot 0: %v", merr)
	}
	checkClean(t, res, err)
	inWindow := res.Ops[lab.OpGet].Redirects.Moved + res.Ops[lab.OpSet].Redirects.Moved
	if res.Cluster.Moved == 0 || inWindow == 0 || inWindow > res.Cluster.Moved {
		t.Fatalf("MOVED: %d in the window, %d in the run; want at least one, the window's within the run's", inWindow, res.Cluster.Moved)
	}
	t.Logf("MOVED %d (window %d), ASK %d", res.Cluster.Moved, inWindow, res.Cluster.Ask)
	n, err := conns[1].Integer(ctx, "CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(0))
	if err != nil || n != 1 {
		t.Fatalf("slot 0 on its new node holds %d keys (%v), want 1", n, err)
	}
}
