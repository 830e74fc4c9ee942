package agent

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/metrics"
)

// liveServer is a started server as the agent's metrics see it: pid and,
// for a cluster, its other nodes.
type liveServer struct {
	sweeps.RunningServer
	pid   int
	nodes []int
}

func (s liveServer) PID() int { return s.pid }
func (s liveServer) Identity() sweeps.Resolved {
	return sweeps.Resolved{Name: "valkey", Version: "9.1.2"}
}

type liveCluster struct{ liveServer }

func (c liveCluster) NodePIDs() []int { return c.nodes }

// The agent's live metrics list every process of the servers it runs, a
// cluster's every node, in start order, until the server is stopped.
func TestAgentMetricsListEveryClusterNode(t *testing.T) {
	a := &Agent{}
	a.noteServer(2, liveCluster{liveServer{pid: 20, nodes: []int{21, 22}}})
	a.noteServer(1, liveServer{pid: 10})
	name := "valkey-9.1.2"
	want := []metrics.HostServer{{Name: name, PID: 10}, {Name: name, PID: 20}, {Name: name, PID: 21}, {Name: name, PID: 22}}
	if got := a.metricServers.list(); !slices.Equal(got, want) {
		t.Errorf("servers %+v, want %+v", got, want)
	}
	a.noteServer(2, nil)
	if got := a.metricServers.list(); !slices.Equal(got, want[:1]) {
		t.Errorf("after the cluster stopped: %+v, want %+v", got, want[:1])
	}
}

// The agent's snapshot of a cluster it started samples every node: here
// this test's process as node 1 and its parent as node 2, on the real
// /proc.
func TestAgentSnapshotSamplesEveryClusterNode(t *testing.T) {
	a := &Agent{servers: map[int]sweeps.RunningServer{1: liveCluster{liveServer{pid: os.Getpid(), nodes: []int{os.Getppid()}}}}}
	r := a.answer(context.Background(), opSnapshot, []byte(`{"server":1}`))
	if r.Error != "" || r.Snapshot == nil {
		t.Fatalf("snapshot: %q", r.Error)
	}
	s := r.Snapshot
	if s.Proc == nil || s.Proc.PID != os.Getpid() || s.Proc.Node != 1 || len(s.Nodes) != 1 || s.Nodes[0].PID != os.Getppid() || s.Nodes[0].Node != 2 ||
		len(s.Nodes[0].Threads) == 0 {
		t.Errorf("snapshot processes %+v and %+v, want this process as node 1 and its parent as node 2", s.Proc, s.Nodes)
	}
}
