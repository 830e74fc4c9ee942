package plots

import (
	"fmt"
	"sort"
	"strings"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/sweeps"
)

// Setup is the measurement setup as the charts' captions state it.
type Setup struct {
	Hosts    string // server and client hosts
	Tuning   string
	Load     string // connections, pipeline, threads
	Window   string // warmup and measured duration, repetitions
	Server   string // server settings
	Versions string
}

// Setup describes the campaign's setup from the environment record, the
// plan and the cells' workloads.
func (c *Campaign) Setup() Setup {
	s := Setup{Hosts: c.setupHosts(), Tuning: c.setupTuning()}
	s.Load, s.Window = c.setupLoad()
	if c.Plan != nil && c.Plan.Campaign.Repetitions > 0 {
		s.Window += fmt.Sprintf(", %d repetition%s", c.Plan.Campaign.Repetitions, plural(c.Plan.Campaign.Repetitions))
	}
	if c.Plan != nil {
		sv := c.Plan.Campaign.Server
		var parts []string
		if sv.IOThreads > 0 {
			parts = append(parts, fmt.Sprintf("io-threads %d", sv.IOThreads))
		}
		if len(sv.CPUs) > 0 {
			parts = append(parts, "pinned to CPUs "+sv.CPUs.String())
		}
		if sv.MaxMemory != "" {
			parts = append(parts, "maxmemory "+sv.MaxMemory)
		}
		s.Server = strings.Join(parts, ", ")
	}
	s.Versions = strings.Join(c.Versions, ", ")
	return s
}

// setupHosts is each host's role, name, CPU, kernel and NIC from the
// environment record.
func (c *Campaign) setupHosts() string {
	if c.Run.Env == nil || len(c.Run.Env.Hosts) == 0 {
		return "hosts not recorded (no env.json)"
	}
	var hs []string
	for _, h := range c.Run.Env.Hosts {
		d := h.Role + " " + h.Hostname
		var facts []string
		if h.CPUModel != "" {
			facts = append(facts, h.CPUModel)
		}
		if h.CPUs > 0 {
			facts = append(facts, fmt.Sprintf("%d CPUs", h.CPUs))
		}
		if h.Kernel != "" {
			facts = append(facts, "Linux "+h.Kernel)
		}
		if nic := nicOf(h); nic != "" {
			facts = append(facts, nic)
		}
		if len(facts) > 0 {
			d += " (" + strings.Join(facts, ", ") + ")"
		}
		hs = append(hs, d)
	}
	return strings.Join(hs, "; ")
}

// setupTuning is the tuning the hosts ran under and how many cells were
// measured with the hosts drifted from it.
func (c *Campaign) setupTuning() string {
	var t string
	switch {
	case c.Run.Env != nil && c.Run.Env.TuningProfile != "":
		t = "tuning profile " + c.Run.Env.TuningProfile
	case c.Plan != nil && c.Plan.Campaign.Tuning != "":
		t = "tuning profile " + c.Plan.Campaign.Tuning
	case c.Run.Env != nil && len(c.Run.Env.Tuning) > 0 && string(c.Run.Env.Tuning) != "null":
		t = "tuning snapshot recorded"
	default:
		t = "no tuning"
	}
	drifted := 0
	for _, r := range c.Run.Cells {
		if r.Tuning != nil && r.Tuning.Drifts > 0 {
			drifted++
		}
	}
	if drifted > 0 {
		t += fmt.Sprintf(" (%d cell%s measured with the hosts drifted from it)", drifted, plural(drifted))
	}
	return t
}

// setupLoad is the load the cells' workloads put on (connections,
// pipeline, threads, pacing, probe) and their window.
func (c *Campaign) setupLoad() (load, window string) {
	conns, pipes, threads, warm, dur := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	rates, ramps, probes := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, w := range c.workloads() {
		switch {
		case !w.Rate.IsZero():
			rates[w.Rate.String()] = true
		case !w.Ramp.IsZero():
			ramps[w.Ramp.String()] = true
		}
		if !w.Probe.IsZero() {
			probes[w.Probe.String()] = true
		}
		conns[fmt.Sprint(w.Connections)] = true
		pipes[fmt.Sprint(w.Pipeline)] = true
		if w.Threads > 0 {
			threads[fmt.Sprint(w.Threads)] = true
		}
		warm[w.Warmup.String()] = true
		dur[w.Duration.String()] = true
	}
	load = fmt.Sprintf("%s connections, pipeline %s", joinSet(conns), joinSet(pipes))
	if len(threads) > 0 {
		load += fmt.Sprintf(", %s client threads", joinSet(threads))
	}
	if len(rates) > 0 {
		load += ", open loop at " + joinSet(rates)
	}
	if len(ramps) > 0 {
		load += ", ramp " + joinSet(ramps)
	}
	if len(probes) > 0 {
		load += ", probe " + joinSet(probes)
	}
	return load, fmt.Sprintf("%s warmup + %s measured", joinSet(warm), joinSet(dur))
}

// Caption is the setup in two short lines for charts.
func (s Setup) Caption() []string {
	l2 := s.Load + "; " + s.Window
	if s.Server != "" {
		l2 += "; server " + s.Server
	}
	return []string{s.Hosts + "; " + s.Tuning, l2}
}

func nicOf(h sweeps.HostFacts) string {
	for _, n := range h.NICs {
		if n.Name == "lo" || n.Driver == "" {
			continue
		}
		d := n.Name + " " + n.Driver
		if n.SpeedMbps != nil {
			d += fmt.Sprintf(" %g Gbps", float64(*n.SpeedMbps)/1000)
		}
		return d
	}
	return ""
}

func (c *Campaign) workloads() []lab.Workload {
	var out []lab.Workload
	if c.Plan != nil {
		for _, pc := range c.Plan.Cells {
			out = append(out, pc.Workload)
		}
		return out
	}
	for _, r := range c.Run.Sorted() {
		out = append(out, r.Workload)
	}
	return out
}

func joinSet(m map[string]bool) string {
	if len(m) == 0 {
		return "?"
	}
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return naturalLess(ks[i], ks[j]) })
	return strings.Join(ks, "/")
}
