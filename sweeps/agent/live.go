package agent

import (
	"sort"
	"sync"

	"github.com/linerate/linerate/infra/kernel"
	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/hostmetrics"
	"github.com/linerate/linerate/sweeps/metrics"
)

// agentServers are the servers an agent's metrics cover (each its
// processes: a cluster's every node); the HTTP handler reads them while
// the request loop changes them.
type agentServers struct {
	mu sync.Mutex
	m  map[int][]metrics.HostServer
}

func (s *agentServers) set(id int, hs []metrics.HostServer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[int][]metrics.HostServer{}
	}
	if hs == nil {
		delete(s.m, id)
		return
	}
	s.m[id] = hs
}

func (s *agentServers) list() []metrics.HostServer {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]int, 0, len(s.m))
	for id := range s.m {
		ids = append(ids, id)
	}
	sort.Ints(ids) // in start order
	var out []metrics.HostServer
	for _, id := range ids {
		out = append(out, s.m[id]...)
	}
	return out
}

// HostMetrics is the agent's host figures for --metrics-listen: this
// host's CPUs and interfaces, and the servers the agent runs now.
func (a *Agent) HostMetrics() *metrics.Host {
	return &metrics.Host{FS: hostmetrics.Sampler{Kernel: kernel.FS{Root: a.root()}}, Servers: a.metricServers.list}
}

// noteServer adds (srv non-nil) or removes a server from the metrics.
func (a *Agent) noteServer(id int, srv sweeps.RunningServer) {
	if srv == nil {
		a.metricServers.set(id, nil)
		return
	}
	a.metricServers.set(id, metrics.ServersOf(srv))
}
