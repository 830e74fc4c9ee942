package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/hostmetrics"
	"github.com/linerate/linerate/sweeps/local"
	"github.com/linerate/linerate/sweeps/metrics"
	"github.com/linerate/linerate/sweeps/session"
)

const metricsListenHelp = "serve live OpenMetrics at http://ADDR/metrics while it runs, e.g. 127.0.0.1:9100 (off unless given; only on ADDR)"

// startMetrics serves cs on addr when it is set. It returns nil and exit
// code 0 when addr is empty, and nil and 2 (printed) for an address that
// cannot be listened on.
func startMetrics(who, addr string, cs ...prometheus.Collector) (*metrics.Server, int) {
	if addr == "" {
		return nil, 0
	}
	s, err := metrics.Listen(addr, cs...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "linerate %s: %v\n", who, err)
		var ae *metrics.AddrError
		if errors.As(err, &ae) {
			return nil, 2
		}
		return nil, 1
	}
	fmt.Fprintf(os.Stderr, "linerate %s: metrics at %s\n", who, s.URL())
	return s, 0
}

// liveLines writes each tick as one JSON line on w, for a coordinator that
// runs this bench on another host (local.HostBencher reads them back).
func liveLines(w io.Writer) func(*lab.Live) {
	var mu sync.Mutex
	return func(l *lab.Live) {
		b, err := json.Marshal(l)
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "%s%s\n", local.LiveLinePrefix, b)
	}
}

// bothLive feeds every non-nil sink.
func bothLive(sinks ...func(*lab.Live)) func(*lab.Live) {
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

// cellProgress names each cell in the live metrics as it starts.
type cellProgress struct {
	sweeps.Progress
	live *metrics.Live
}

func (p cellProgress) CellStart(c sweeps.Cell) {
	p.live.SetCell(c.ID)
	p.Progress.CellStart(c)
}

// localServers remembers the servers a starter started on this machine
// (local and netns pairs), so the coordinator's own metrics cover them as
// an agent's cover its host's; servers on other hosts have no PID here.
type localServers struct {
	sweeps.ServerStarter
	mu   sync.Mutex
	list []metrics.HostServer
}

func (s *localServers) Start(ctx context.Context, v sweeps.PlanVersion, logDir string) (sweeps.RunningServer, error) {
	srv, err := s.ServerStarter.Start(ctx, v, logDir)
	if err == nil && srv.PID() > 0 {
		id := srv.Identity()
		s.mu.Lock()
		s.list = append(s.list, metrics.HostServer{Name: id.Name + "-" + id.Version, PID: srv.PID()})
		s.mu.Unlock()
	}
	return srv, err
}

// running lists the remembered servers whose process is still there.
func (s *localServers) running() []metrics.HostServer {
	s.mu.Lock()
	defer s.mu.Unlock()
	keep := s.list[:0]
	for _, hs := range s.list {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", hs.PID)); err == nil {
			keep = append(keep, hs)
		}
	}
	s.list = keep
	return append([]metrics.HostServer(nil), keep...)
}

// runMetrics is what sweep run and soak serve: the cell's live totals and
// the servers this machine runs.
type runMetrics struct {
	srv     *metrics.Server
	live    *metrics.Live
	servers *localServers
}

// startRunMetrics serves a run's metrics on addr, or returns a nil
// *runMetrics when addr is empty; code is non-zero (printed) on failure.
func startRunMetrics(who, addr string) (*runMetrics, int) {
	if addr == "" {
		return nil, 0
	}
	m := &runMetrics{live: metrics.NewLive(), servers: &localServers{}}
	host := &metrics.Host{FS: hostmetrics.Sampler{}, Servers: m.servers.running}
	srv, code := startMetrics(who, addr, m.live, host)
	if srv == nil {
		return nil, code
	}
	m.srv = srv
	return m, 0
}

// watch has the session feed the metrics: each cell's live totals, and
// the servers it starts put between its placement and its runner.
func (m *runMetrics) watch(opt *session.Options) {
	if m == nil {
		return
	}
	opt.Live = m.live.Update
	opt.Servers = func(st sweeps.ServerStarter) sweeps.ServerStarter {
		m.servers.ServerStarter = st
		return m.servers
	}
}

// progress names each cell in the metrics as it starts.
func (m *runMetrics) progress(p sweeps.Progress) sweeps.Progress {
	if m == nil {
		return p
	}
	return cellProgress{Progress: p, live: m.live}
}

// cell names the one cell a soak reruns.
func (m *runMetrics) cell(id string) {
	if m != nil {
		m.live.SetCell(id)
	}
}

func (m *runMetrics) close() {
	if m != nil {
		m.srv.Close()
	}
}
