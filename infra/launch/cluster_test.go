package launch_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/launch"
	"github.com/linerate/linerate/infra/servers/serverstest"
	"github.com/linerate/linerate/lab/cluster"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/lab/resp"
)

// A cluster of 3 store valkey processes: formed with every slot served in
// even ranges (node i serving cluster.Ranges(3)[i]), each node with its
// own bus port and config file, and every process gone after Stop. With
// two nodes on CPUs 0-1 each node is pinned to a CPU of its own.
func TestClusterStartStop(t *testing.T) {
	inst := serverstest.Valkey(t)
	for _, tc := range []struct {
		n    int
		cpus string
	}{{3, ""}, {2, "0-1"}} {
		l := &launch.Cluster{Launcher: inst.Launcher(), N: tc.n}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		dir := t.TempDir()
		srv, err := l.Start(ctx, infra.ServerSettings{LogDir: dir, CPUs: tc.cpus})
		if err != nil {
			t.Fatal(err)
		}
		nodes := launch.Nodes(srv)
		var pids []int
		for _, n := range nodes {
			pids = append(pids, n.Facts().PID)
		}
		check := func() {
			c, err := resp.Dial(ctx, srv.Addr(), resp.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			m, err := cluster.ReadMap(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			if len(nodes) != tc.n || len(m.Nodes) != tc.n || nodes[0].Addr() != srv.Addr() {
				t.Fatalf("map %+v, %d nodes", m.Nodes, len(nodes))
			}
			for i, r := range cluster.Ranges(tc.n) {
				if got := m.Nodes[m.Owner[r[0]]].Addr; got != nodes[i].Addr() || m.Owner[r[1]] != m.Owner[r[0]] {
					t.Errorf("slots %v served by %s, want node %d %s", r, got, i, nodes[i].Addr())
				}
			}
			for i, n := range nodes {
				argv := n.Facts().Argv
				if !slices.Contains(argv, "--cluster-port") || !strings.Contains(n.LogPath(), "node-") {
					t.Errorf("node %d: argv %v, log %s", i, argv, n.LogPath())
				}
				if tc.cpus == "" {
					continue
				}
				for _, th := range n.Facts().Threads {
					if th.CPUs != []string{"0", "1"}[i] {
						t.Errorf("node %d thread %s on CPUs %s", i, th.Name, th.CPUs)
					}
				}
			}
		}
		check()
		if err := srv.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
		for _, pid := range pids {
			if !labtest.GoneWithin(pid, labtest.GoneLimit) {
				t.Errorf("node pid %d still runs after Stop", pid)
			}
		}
	}
}

// failSecond is a launcher whose second start fails.
type failSecond struct {
	l       infra.Launcher
	started []infra.Server
}

func (f *failSecond) Start(ctx context.Context, s infra.ServerSettings) (infra.Server, error) {
	if len(f.started) == 1 {
		return nil, errors.New("no room for a second node")
	}
	srv, err := f.l.Start(ctx, s)
	if err == nil {
		f.started = append(f.started, srv)
	}
	return srv, err
}

// A node that cannot start stops the ones already started; settings a
// cluster cannot take are refused before anything starts.
func TestClusterStartFails(t *testing.T) {
	inst := serverstest.Valkey(t)
	ctx := context.Background()
	f := &failSecond{l: inst.Launcher()}
	_, err := (&launch.Cluster{Launcher: f, N: 3}).Start(ctx, infra.ServerSettings{LogDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "start cluster node 2 of 3") {
		t.Fatalf("start: %v", err)
	}
	if len(f.started) != 1 {
		t.Fatalf("%d nodes started", len(f.started))
	}
	if pid := f.started[0].Facts().PID; !labtest.GoneWithin(pid, labtest.GoneLimit) {
		t.Errorf("node 1 (pid %d) still runs after node 2 failed", pid)
	}
	for _, tc := range []struct {
		n    int
		set  infra.ServerSettings
		want string
	}{
		{0, infra.ServerSettings{}, "cluster: 0 nodes"},
		{cluster.MaxNodes + 1, infra.ServerSettings{}, "use 1-64"},
		{3, infra.ServerSettings{CPUs: "0-1"}, "2 CPUs for a cluster of 3 nodes"},
		{2, infra.ServerSettings{TLS: true}, "not with tls"},
	} {
		never := &failSecond{l: inst.Launcher()}
		_, err := (&launch.Cluster{Launcher: never, N: tc.n}).Start(ctx, tc.set)
		if err == nil || !strings.Contains(err.Error(), tc.want) || len(never.started) != 0 {
			t.Errorf("n=%d %+v: %v (started %d), want %q", tc.n, tc.set, err, len(never.started), tc.want)
		}
	}
}
