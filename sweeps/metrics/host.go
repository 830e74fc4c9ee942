package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/linerate/linerate/sweeps/hostmetrics"
)

// The host sampler's figures, as the agent on a server host serves them:
// the same /proc reads that cut a cell's host metrics to its window, taken
// at each scrape instead.
var (
	hostCPUDesc = prometheus.NewDesc("linerate_host_cpu_seconds_total",
		"Each CPU's time, busy or idle (from /proc/stat).", []string{"cpu", "mode"}, nil)
	hostRxDesc = prometheus.NewDesc("linerate_host_network_receive_bytes_total",
		"Bytes received per interface (the server's network namespace when it has its own).", []string{"device"}, nil)
	hostTxDesc = prometheus.NewDesc("linerate_host_network_transmit_bytes_total",
		"Bytes sent per interface (the server's network namespace when it has its own).", []string{"device"}, nil)
	serverCPUDesc = prometheus.NewDesc("linerate_server_cpu_seconds_total",
		"CPU time of each server thread, by thread name (main thread, io_thd_N, ...).",
		[]string{"server", "pid", "thread", "tid", "mode"}, nil)
	serverFaultsDesc = prometheus.NewDesc("linerate_server_minor_faults_total",
		"Minor page faults of the server process.", []string{"server", "pid"}, nil)
	hostUpDesc = prometheus.NewDesc("linerate_host_sample_ok",
		"1 when the last scrape read the host's /proc, 0 when it failed.", nil, nil)
)

// HostServer is a server process the host's figures cover.
type HostServer struct {
	Name string // name-version, e.g. valkey-9.1.2
	PID  int
}

// Host is a prometheus.Collector of a host's sampler figures: every CPU,
// every interface and each server's threads and faults.
type Host struct {
	FS hostmetrics.Sampler
	// Servers lists the servers running now; nil: the host only.
	Servers func() []HostServer
}

// Describe implements prometheus.Collector.
func (h *Host) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{hostCPUDesc, hostRxDesc, hostTxDesc, serverCPUDesc, serverFaultsDesc, hostUpDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. A server that ended between
// the listing and the read is left out, not an error.
func (h *Host) Collect(ch chan<- prometheus.Metric) {
	var servers []HostServer
	if h.Servers != nil {
		servers = h.Servers()
	}
	// The NICs as the first server sees them (its namespace), else the host's.
	pid := 0
	if len(servers) > 0 {
		pid = servers[0].PID
	}
	snap, err := h.FS.Snapshot(pid)
	if err != nil && pid != 0 {
		snap, err = h.FS.Snapshot(0)
	}
	if err != nil {
		ch <- prometheus.MustNewConstMetric(hostUpDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(hostUpDesc, prometheus.GaugeValue, 1)
	for _, c := range snap.Cores {
		cpu := strconv.Itoa(c.CPU)
		ch <- prometheus.MustNewConstMetric(hostCPUDesc, prometheus.CounterValue, ticks(c.Busy), cpu, "busy")
		ch <- prometheus.MustNewConstMetric(hostCPUDesc, prometheus.CounterValue, ticks(c.Total-min(c.Busy, c.Total)), cpu, "idle")
	}
	for _, n := range snap.NICs {
		ch <- prometheus.MustNewConstMetric(hostRxDesc, prometheus.CounterValue, float64(n.Rx), n.Name)
		ch <- prometheus.MustNewConstMetric(hostTxDesc, prometheus.CounterValue, float64(n.Tx), n.Name)
	}
	for _, s := range servers {
		p, err := h.FS.Process(s.PID)
		if err != nil {
			continue
		}
		pid := strconv.Itoa(s.PID)
		ch <- prometheus.MustNewConstMetric(serverFaultsDesc, prometheus.CounterValue, float64(p.MinFlt), s.Name, pid)
		for _, t := range p.Threads {
			tid := strconv.Itoa(t.TID)
			ch <- prometheus.MustNewConstMetric(serverCPUDesc, prometheus.CounterValue, ticks(t.UTicks), s.Name, pid, t.Name, tid, "user")
			ch <- prometheus.MustNewConstMetric(serverCPUDesc, prometheus.CounterValue, ticks(t.STicks), s.Name, pid, t.Name, tid, "system")
		}
	}
}

func ticks(n uint64) float64 { return float64(n) / hostmetrics.UserHZ }
