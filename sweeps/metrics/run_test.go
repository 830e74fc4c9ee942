package metrics

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/sweeps"
)

type fakeServer struct {
	sweeps.RunningServer
	pid int
}

func (s fakeServer) PID() int { return s.pid }
func (s fakeServer) Identity() sweeps.Resolved {
	return sweeps.Resolved{Name: "valkey", Version: "9.1.2"}
}

type fakeStarter struct{ pids []int }

func (f *fakeStarter) Start(context.Context, sweeps.PlanVersion, string) (sweeps.RunningServer, error) {
	pid := f.pids[0]
	f.pids = f.pids[1:]
	return fakeServer{pid: pid}, nil
}

// A run's metrics cover the servers its starter started on this machine
// while their process is there: not one on another host (PID 0), not one
// that has exited.
func TestRunNotesStartedServers(t *testing.T) {
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	r := NewRun()
	_, wrap := r.Hooks()
	st := wrap(&fakeStarter{pids: []int{os.Getpid(), 0, gone.Process.Pid}})
	for i := 0; i < 3; i++ {
		if _, err := st.Start(context.Background(), sweeps.PlanVersion{}, ""); err != nil {
			t.Fatal(err)
		}
	}
	got := r.servers.running()
	if len(got) != 1 || got[0] != (HostServer{Name: "valkey-9.1.2", PID: os.Getpid()}) {
		t.Fatalf("running servers %+v, want only this process as valkey-9.1.2", got)
	}
}

type fakeCluster struct {
	fakeServer
	nodes []int
}

func (c fakeCluster) NodePIDs() []int { return c.nodes }

type clusterStarter struct{ srv fakeCluster }

func (c clusterStarter) Start(context.Context, sweeps.PlanVersion, string) (sweeps.RunningServer, error) {
	return c.srv, nil
}

// A cluster's every node is a server of the run's metrics, by its PID.
func TestRunNotesEveryClusterNode(t *testing.T) {
	r := NewRun()
	_, wrap := r.Hooks()
	st := wrap(clusterStarter{fakeCluster{fakeServer{pid: os.Getpid()}, []int{os.Getppid()}}})
	if _, err := st.Start(context.Background(), sweeps.PlanVersion{}, ""); err != nil {
		t.Fatal(err)
	}
	got := r.servers.running()
	want := []HostServer{{Name: "valkey-9.1.2", PID: os.Getpid()}, {Name: "valkey-9.1.2", PID: os.Getppid()}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("running servers %+v, want %+v", got, want)
	}
}

// Feed feeds every sink given and is nil when there is none.
func TestFeed(t *testing.T) {
	if Feed(nil, nil) != nil {
		t.Fatal("Feed of no sinks is not nil")
	}
	var a, b int
	Feed(func(*lab.Live) { a++ }, nil, func(*lab.Live) { b++ })(&lab.Live{})
	if a != 1 || b != 1 {
		t.Fatalf("sinks fed %d and %d times, want once each", a, b)
	}
}
