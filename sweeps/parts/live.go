package parts

import (
	"bytes"
	"encoding/json"
	"io"
	"sort"
	"sync"

	"github.com/linerate/linerate/infra/kernel"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/hostmetrics"
	"github.com/linerate/linerate/sweeps/metrics"
)

// LiveLinePrefix starts each line `linerate bench --live-json` writes to
// stderr: one lab.Live as JSON.
const LiveLinePrefix = "live "

// liveWriter splits a remote bench's stderr: live lines go to live, the
// rest to rest (kept for error messages).
type liveWriter struct {
	live func(*lab.Live)
	rest io.Writer
	mu   sync.Mutex
	buf  []byte
}

func (w *liveWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		line := w.buf[:i+1]
		if rest, ok := bytes.CutPrefix(line, []byte(LiveLinePrefix)); ok {
			var l lab.Live
			if json.Unmarshal(rest, &l) == nil {
				w.live(&l)
			}
		} else {
			_, _ = w.rest.Write(line)
		}
		w.buf = w.buf[i+1:]
	}
	// A line longer than any tick is not one: pass it on as it is.
	if len(w.buf) > 1<<20 {
		_, _ = w.rest.Write(w.buf)
		w.buf = w.buf[:0]
	}
	return len(p), nil
}

// agentServers are the servers an agent's metrics cover; the HTTP
// handler reads them while the request loop changes them.
type agentServers struct {
	mu sync.Mutex
	m  map[int]metrics.HostServer
}

func (s *agentServers) set(id int, hs *metrics.HostServer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[int]metrics.HostServer{}
	}
	if hs == nil {
		delete(s.m, id)
		return
	}
	s.m[id] = *hs
}

func (s *agentServers) list() []metrics.HostServer {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]int, 0, len(s.m))
	for id := range s.m {
		ids = append(ids, id)
	}
	sort.Ints(ids) // in start order
	out := make([]metrics.HostServer, 0, len(ids))
	for _, id := range ids {
		out = append(out, s.m[id])
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
	idn := srv.Identity()
	a.metricServers.set(id, &metrics.HostServer{Name: idn.Name + "-" + idn.Version, PID: srv.PID()})
}
