package metrics

import (
	"context"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/linerate/linerate/infra/kernel"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/hostmetrics"
)

// Run is what a sweep run or a soak serves: the running totals of the
// cell in flight, and this machine's figures with the servers it starts
// (local and netns pairs; a server on another host has no PID here, its
// agent serves it). A nil *Run is metrics off.
type Run struct {
	// Server serves the collectors; Close closes it.
	Server  *Server
	live    *Live
	servers startedServers
}

// NewRun is a run's metrics with nothing measured yet.
func NewRun() *Run { return &Run{live: NewLive()} }

// Collectors are what a metrics server serves for the run.
func (r *Run) Collectors() []prometheus.Collector {
	return []prometheus.Collector{r.live, &Host{FS: hostmetrics.Sampler{}, Servers: r.servers.running}}
}

// Hooks are the session's feeds (session.Options Live and Servers): each
// cell's live totals, and the placement's server starter wrapped to note
// what it starts.
func (r *Run) Hooks() (live func(*lab.Live), servers func(sweeps.ServerStarter) sweeps.ServerStarter) {
	return r.live.Update, func(st sweeps.ServerStarter) sweeps.ServerStarter {
		r.servers.ServerStarter = st
		return &r.servers
	}
}

// Progress names each cell in the metrics as it starts, then tells p.
func (r *Run) Progress(p sweeps.Progress) sweeps.Progress {
	if r == nil {
		return p
	}
	return cellProgress{Progress: p, live: r.live}
}

// SetCell names the one cell a soak reruns.
func (r *Run) SetCell(id string) {
	if r != nil {
		r.live.SetCell(id)
	}
}

type cellProgress struct {
	sweeps.Progress
	live *Live
}

func (p cellProgress) CellStart(c sweeps.Cell) {
	p.live.SetCell(c.ID)
	p.Progress.CellStart(c)
}

// ServersOf is how the metrics name a running server's processes: its
// PID, then a cluster's other nodes under the same name (their pid
// labels tell them apart).
func ServersOf(srv sweeps.RunningServer) []HostServer {
	id := srv.Identity()
	name := id.Name + "-" + id.Version
	out := []HostServer{{Name: name, PID: srv.PID()}}
	for _, pid := range sweeps.NodePIDs(srv) {
		out = append(out, HostServer{Name: name, PID: pid})
	}
	return out
}

// startedServers remembers the servers a starter started on this machine.
type startedServers struct {
	sweeps.ServerStarter
	mu   sync.Mutex
	list []HostServer
}

func (s *startedServers) Start(ctx context.Context, v sweeps.PlanVersion, logDir string) (sweeps.RunningServer, error) {
	srv, err := s.ServerStarter.Start(ctx, v, logDir)
	if err == nil && srv.PID() > 0 {
		s.mu.Lock()
		s.list = append(s.list, ServersOf(srv)...)
		s.mu.Unlock()
	}
	return srv, err
}

// running lists the remembered servers whose process is still there.
func (s *startedServers) running() []HostServer {
	s.mu.Lock()
	defer s.mu.Unlock()
	keep := s.list[:0]
	for _, hs := range s.list {
		if _, err := (kernel.FS{}).Stat(fmt.Sprintf("/proc/%d", hs.PID)); err == nil {
			keep = append(keep, hs)
		}
	}
	s.list = keep
	return append([]HostServer(nil), keep...)
}

// Feed is one sink of live ticks fed to every non-nil one of sinks; nil
// when there is none.
func Feed(sinks ...func(*lab.Live)) func(*lab.Live) {
	var live []func(*lab.Live)
	for _, s := range sinks {
		if s != nil {
			live = append(live, s)
		}
	}
	if len(live) == 0 {
		return nil
	}
	return func(l *lab.Live) {
		for _, s := range live {
			s(l)
		}
	}
}
