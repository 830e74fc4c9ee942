package sweeps

import (
	"bufio"
	"bytes"
	"github.com/linerate/linerate/lab"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Build identifies the linerate binary that ran a campaign.
type Build struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Modified  bool   `json:"modified,omitempty"` // built from a tree with uncommitted changes
	GoVersion string `json:"go_version"`
}

// ThisBuild reads the binary's own build info (vcs.revision is present when
// built from a git checkout with -buildvcs).
func ThisBuild() Build {
	lb := lab.Build() // one notion of "this binary" for bench records and run records
	commit, dirty := strings.CutSuffix(lb.Commit, "-dirty")
	return Build{Version: lb.Version, Commit: commit, Modified: dirty, GoVersion: lb.GoVersion}
}

// HostFacts is one host of the run.
type HostFacts struct {
	Role     string    `json:"role"` // server, client, or both on one machine
	Hostname string    `json:"hostname"`
	Kernel   string    `json:"kernel"`
	CPUModel string    `json:"cpu_model"`
	CPUs     int       `json:"cpus"`
	NICs     []NICFact `json:"nics,omitempty"`
	// MinorFaultCost is the measured price of one fresh-page fault
	// (hostmetrics.MeasureFaultCost); it feeds the page-fault limit label.
	MinorFaultCost time.Duration `json:"minor_fault_cost_ns,omitempty"`
	// ClockOffset is this host's clock minus the coordinator's, measured
	// through its agent when the run started (remote hosts only). Server
	// host snapshots are moved onto the client host's clock with it.
	ClockOffset time.Duration `json:"clock_offset_ns,omitempty"`
}

// NICFact is one network interface with its driver, where it has one.
type NICFact struct {
	Name   string `json:"name"`
	Driver string `json:"driver,omitempty"`
	// SpeedMbps is absent when the driver does not say (virtio, veth).
	SpeedMbps *int `json:"speed_mbps,omitempty"`
}

// LocalHostFacts reads the facts of the host whose /proc and /sys are under
// root ("/" here). Unreadable facts stay empty: a record with a gap beats no
// record.
func LocalHostFacts(root, role string) HostFacts {
	read := func(p ...string) string {
		b, _ := os.ReadFile(filepath.Join(append([]string{root}, p...)...))
		return strings.TrimSpace(string(b))
	}
	h := HostFacts{Role: role,
		Hostname: read("proc", "sys", "kernel", "hostname"),
		Kernel:   read("proc", "sys", "kernel", "osrelease"),
	}
	h.CPUModel, h.CPUs = parseCPUInfo([]byte(read("proc", "cpuinfo")))
	netDir := filepath.Join(root, "sys", "class", "net")
	ents, _ := os.ReadDir(netDir)
	for _, e := range ents {
		n := NICFact{Name: e.Name()}
		if l, err := os.Readlink(filepath.Join(netDir, e.Name(), "device", "driver")); err == nil {
			n.Driver = filepath.Base(l)
		}
		if s, err := strconv.Atoi(read("sys", "class", "net", e.Name(), "speed")); err == nil && s > 0 {
			n.SpeedMbps = &s
		}
		h.NICs = append(h.NICs, n)
	}
	sort.Slice(h.NICs, func(i, j int) bool { return h.NICs[i].Name < h.NICs[j].Name })
	return h
}

// parseCPUInfo returns the CPU model and the count of processors. arm64
// kernels name no model; their "CPU part" is kept instead.
func parseCPUInfo(b []byte) (string, int) {
	model, part, n := "", "", 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "processor":
			n++
		case "model name", "Model":
			if model == "" {
				model = v
			}
		case "CPU part":
			if part == "" {
				part = "CPU part " + v
			}
		}
	}
	if model == "" {
		model = part
	}
	return model, n
}

// mergeEarlier folds an earlier session's record into e: servers keep
// their earlier order, a version started again in e has e's facts, and
// one e did not start keeps the earlier facts.
func (e *Environment) mergeEarlier(old *Environment) {
	if !old.Created.IsZero() && (e.Created.IsZero() || old.Created.Before(e.Created)) {
		e.Created = old.Created
	}
	now := map[string]ServerFacts{}
	for _, f := range e.Servers {
		now[f.Segment] = f
	}
	merged := make([]ServerFacts, 0, len(old.Servers)+len(e.Servers))
	seen := map[string]bool{}
	for _, f := range old.Servers {
		if seen[f.Segment] {
			continue
		}
		seen[f.Segment] = true
		if cur, ok := now[f.Segment]; ok {
			f = cur
		}
		merged = append(merged, f)
	}
	for _, f := range e.Servers {
		if !seen[f.Segment] {
			seen[f.Segment] = true
			merged = append(merged, f)
		}
	}
	e.Servers = merged
}
