package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Path is where the metrics are served.
const Path = "/metrics"

// AddrError is a --metrics-listen address that cannot be listened on: bad
// input, exit 2 in the CLI.
type AddrError struct {
	Addr string
	Err  error
}

func (e *AddrError) Error() string {
	return fmt.Sprintf("--metrics-listen %q: %v (want HOST:PORT, e.g. 127.0.0.1:9100)", e.Addr, e.Err)
}
func (e *AddrError) Unwrap() error { return e.Err }

// Server serves collectors at Path on one address.
type Server struct {
	ln  net.Listener
	srv *http.Server
}

// Listen serves the collectors, plus this process's CPU and memory
// (process_*), on addr: only there, and only when asked, so nothing is
// exposed by default. A malformed address, or one that cannot be bound, is
// an *AddrError before anything runs.
func Listen(addr string, cs ...prometheus.Collector) (*Server, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, &AddrError{addr, err}
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return nil, &AddrError{addr, fmt.Errorf("port %q is not 0-65535", port)}
	}
	if host != "" && net.ParseIP(host) == nil && host != "localhost" {
		return nil, &AddrError{addr, fmt.Errorf("host %q is not an IP address", host)}
	}
	reg := prometheus.NewRegistry()
	for _, c := range append(cs, collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})) {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, &AddrError{addr, err}
	}
	mux := http.NewServeMux()
	mux.Handle(Path, promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	s := &Server{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// URL is where a scraper finds the metrics.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() + Path }

// Close stops serving; a scrape under way gets a second to finish. A nil
// server (metrics off) has nothing to close.
func (s *Server) Close() error {
	if s == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return s.srv.Close()
}

// DefaultLinger is how long a command's metrics stay up after its run
// ended (--metrics-linger): longer than Prometheus's default scrape
// interval (15 s), so the scrape after the final totals comes while they
// are still served; MaxLinger bounds the flag.
const (
	DefaultLinger = 15 * time.Second
	MaxLinger     = time.Hour
)

// CheckLinger holds a --metrics-linger value to 0..MaxLinger.
func CheckLinger(d time.Duration) error {
	if d < 0 || d > MaxLinger {
		return fmt.Errorf("--metrics-linger %s: want 0 to %s (0: close at the end)", d, MaxLinger)
	}
	return nil
}

// CloseAfter serves what the collectors hold for d more (the run's final
// totals, for the scrape that comes after its end), or until ctx ends,
// then closes. A nil server has nothing to keep up.
func (s *Server) CloseAfter(ctx context.Context, d time.Duration) error {
	if s == nil {
		return nil
	}
	if d > 0 && ctx.Err() == nil {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	return s.Close()
}

// Names lists every metric name the collectors here export, as a query
// names them (histograms by their _bucket, _sum and _count series).
func Names() []string {
	return []string{
		"linerate_payload_bytes_total", "linerate_requests_total",
		"linerate_request_duration_seconds_bucket", "linerate_request_duration_seconds_sum", "linerate_request_duration_seconds_count",
		"linerate_cell_info", "linerate_run_phase",
		"linerate_host_cpu_seconds_total", "linerate_host_network_receive_bytes_total", "linerate_host_network_transmit_bytes_total",
		"linerate_server_cpu_seconds_total", "linerate_server_minor_faults_total", "linerate_host_sample_ok",
		"process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds",
	}
}
