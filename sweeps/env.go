package sweeps

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/linerate/linerate/infra/kernel"
	"github.com/linerate/linerate/lab"
)

// Build identifies the linerate binary that ran a campaign.
type Build struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Modified  bool   `json:"modified,omitempty"` // built from a tree with uncommitted changes
	GoVersion string `json:"go_version"`
	// GOOS and GOARCH are what the binary was built for (runtime.GOOS,
	// runtime.GOARCH): "linux", "amd64" or "arm64".
	GOOS   string `json:"goos"`
	GOARCH string `json:"goarch"`
}

// ThisBuild reads the binary's own build info (vcs.revision is present when
// built from a git checkout with -buildvcs).
func ThisBuild() Build {
	lb := lab.Build() // one notion of "this binary" for bench records and run records
	commit, dirty := strings.CutSuffix(lb.Commit, "-dirty")
	return Build{Version: lb.Version, Commit: commit, Modified: dirty, GoVersion: lb.GoVersion,
		GOOS: runtime.GOOS, GOARCH: runtime.GOARCH}
}

// WriteText prints one fact a line, name first, for people and grep.
func (b Build) WriteText(w io.Writer) {
	commit, modified := b.Commit, fmt.Sprint(b.Modified)
	if commit == "" {
		commit, modified = "unknown (built without VCS information)", "unknown"
	}
	fmt.Fprintf(w, "linerate %s\ncommit   %s\nmodified %s\ngo       %s %s/%s\n",
		b.Version, commit, modified, b.GoVersion, b.GOOS, b.GOARCH)
}

// HostFacts is one host of the run.
type HostFacts struct {
	Role     string    `json:"role"` // server, client, or both on one machine
	Hostname string    `json:"hostname"`
	Kernel   string    `json:"kernel"`
	Arch     string    `json:"arch"` // the kernel's machine, as uname names it: x86_64, aarch64
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
	k := kernel.FS{Root: root}
	h := HostFacts{Role: role}
	h.Hostname, _ = k.Hostname()
	h.Kernel, _ = k.KernelRelease()
	h.Arch, _ = k.Arch()
	if ci, err := k.CPUInfo(); err == nil {
		h.CPUModel, h.CPUs = ci.Model, ci.CPUs
	}
	ifs, _ := k.Interfaces()
	for _, i := range ifs {
		n := NICFact{Name: i.Name, Driver: i.Driver}
		if i.SpeedMbps > 0 {
			n.SpeedMbps = &i.SpeedMbps
		}
		h.NICs = append(h.NICs, n)
	}
	return h
}

// mergeEarlier folds an earlier session's record into e: servers keep
// their earlier order, a version started again in e has e's facts, and
// one e did not start keeps the earlier facts.
func (e *Environment) mergeEarlier(old *Environment) {
	if !old.Created.IsZero() && (e.Created.IsZero() || old.Created.Before(e.Created)) {
		e.Created = old.Created
	}
	if e.Link == nil {
		e.Link = old.Link // a session that did not calibrate keeps the last figures
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
