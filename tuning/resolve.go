package tuning

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/linerate/linerate/lab/cpus"
)

// IrqbalanceUnit is the systemd unit tuning starts and stops.
const IrqbalanceUnit = "irqbalance.service"

// irqbalanceConfigs are where distributions keep irqbalance's environment:
// Debian and Ubuntu, then Amazon Linux, RHEL and Fedora.
var irqbalanceConfigs = []string{"/etc/default/irqbalance", "/etc/sysconfig/irqbalance"}

// Facts is what tuning reads from the host before deciding anything.
type Facts struct {
	Topology Topology `json:"topology"`
	NIC      NIC      `json:"nic"`
	// Channels is nil when the driver has no channel operations.
	Channels   *Channels       `json:"channels,omitempty"`
	Irqbalance IrqbalanceState `json:"irqbalance"`
}

// IrqbalanceState is the service's state and its configuration file.
type IrqbalanceState struct {
	Present    bool   `json:"present"`
	Active     bool   `json:"active"`
	ConfigPath string `json:"config_path"`
	// Config is the file's content; nil when the file does not exist.
	Config *string `json:"config,omitempty"`
}

// ReadFacts reads the host: topology, the profile's NIC and its IRQs, its
// queue counts, and irqbalance.
func ReadFacts(ctx context.Context, h Host, p Profile) (Facts, error) {
	var f Facts
	var err error
	if f.Topology, err = ReadTopology(h.FS); err != nil {
		return f, err
	}
	name := p.NIC
	if name == "" {
		addr, err := netip.ParseAddr(p.NICAddress)
		if err != nil {
			return f, fieldErr("nic_address", "%q is not an IP address", p.NICAddress)
		}
		if name, err = h.Addresses.InterfaceWithAddress(ctx, addr); err != nil {
			return f, err
		}
	}
	if f.NIC, err = ReadNIC(h.FS, name); err != nil {
		return f, err
	}
	ch, err := h.Channels.Channels(ctx, name)
	switch {
	case err == nil:
		f.Channels = &ch
	case errors.Is(err, ErrNotSupported):
	default:
		return f, err
	}
	if p.Irqbalance != IrqbalanceLeave {
		if f.Irqbalance, err = readIrqbalance(ctx, h); err != nil {
			return f, err
		}
	}
	return f, nil
}

func readIrqbalance(ctx context.Context, h Host) (IrqbalanceState, error) {
	st, err := h.Services.Status(ctx, IrqbalanceUnit)
	if err != nil {
		return IrqbalanceState{}, fmt.Errorf("irqbalance status: %w", err)
	}
	s := IrqbalanceState{Present: st.Present, Active: st.Active, ConfigPath: irqbalanceConfigs[0]}
	for _, path := range irqbalanceConfigs {
		b, err := h.FS.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return s, fmt.Errorf("read %s: %w", path, err)
		}
		content := string(b)
		s.ConfigPath, s.Config = path, &content
		break
	}
	if s.Config == nil {
		// No file yet: put it where the distribution looks.
		if _, err := h.FS.ReadDir("/etc/sysconfig"); err == nil {
			s.ConfigPath = irqbalanceConfigs[1]
		}
	}
	return s, nil
}

// Desired is a profile resolved against one host: every set explicit, every
// IRQ's CPUs decided.
type Desired struct {
	NIC        string `json:"nic"`
	Irqbalance string `json:"irqbalance"`
	// IrqbalanceBanned and IrqbalanceBanIRQs go into irqbalance's config
	// when it runs: CPUs it must leave alone and the IRQs pinned here.
	IrqbalanceBanned  cpus.List `json:"irqbalance_banned_cpus,omitempty"`
	IrqbalanceBanIRQs []int     `json:"irqbalance_ban_irqs,omitempty"`
	// Queues is nil when the queue count is left as it is.
	Queues     *QueueCounts `json:"queues,omitempty"`
	IRQCPUs    cpus.List    `json:"irq_cpus"`
	IRQSpread  string       `json:"irq_spread"`
	IRQs       []IRQPin     `json:"irqs"`
	ServerCPUs cpus.List    `json:"server_cpus"`
	ClientCPUs cpus.List    `json:"client_cpus"`
	// ReservedCPUs are SMT siblings of IRQ CPUs, kept idle so the server
	// never shares a core with interrupt work.
	ReservedCPUs cpus.List `json:"reserved_cpus,omitempty"`
	Sysctls      []Sysctl  `json:"sysctls,omitempty"`
	// Derived says, per field the profile left out, how its value was chosen.
	Derived map[string]string `json:"derived,omitempty"`
	Notes   []string          `json:"notes,omitempty"`
}

// IRQPin is where one IRQ should run.
type IRQPin struct {
	IRQ   int       `json:"irq"`
	Name  string    `json:"name"`
	Queue int       `json:"queue"`
	CPUs  cpus.List `json:"cpus"`
}

// Sysctl is one setting under /proc/sys.
type Sysctl struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Resolve decides every field of the profile for this host. It refuses CPUs
// the host does not have, sets that overlap without allow_overlap, IRQ CPUs
// sharing an SMT core with the server, and a server left with no CPU.
func Resolve(p Profile, f Facts) (Desired, error) {
	if err := p.Validate(); err != nil {
		return Desired{}, err
	}
	t := f.Topology
	d := Desired{NIC: f.NIC.Name, Derived: map[string]string{}}
	explicit := map[string]cpus.List{}
	for _, e := range []struct{ name, v string }{
		{"irq_cpus", p.IRQCPUs}, {"server_cpus", p.ServerCPUs}, {"client_cpus", p.ClientCPUs},
		{"irqbalance_banned_cpus", p.IrqbalanceBannedCPUs},
	} {
		s, _ := parseCPUSet(e.v) // Validate parsed it
		if beyond := s.Minus(t.CPUs); len(beyond) > 0 {
			return d, fieldErr(e.name, "CPUs %s are beyond this host (online CPUs: %s)", beyond, t.CPUs)
		}
		explicit[e.name] = s
	}

	// Cores in order of preference: the NIC's NUMA node first, so that
	// interrupts, server and client share its memory and its PCIe root.
	nicNode := f.NIC.Node
	nodeDesc := fmt.Sprintf("the NIC's NUMA node %d", nicNode)
	if _, ok := t.Nodes[nicNode]; !ok {
		nicNode = t.nodeIDs()[0]
		nodeDesc = fmt.Sprintf("NUMA node %d", nicNode)
		if len(t.Nodes) > 1 {
			d.Notes = append(d.Notes, fmt.Sprintf("the kernel does not say which NUMA node %s is on: node %d is preferred", f.NIC.Name, nicNode))
		}
	}
	cores := slices.Clone(t.Cores)
	slices.SortStableFunc(cores, func(a, b Core) int {
		ka, kb := a.Node != nicNode, b.Node != nicNode
		switch {
		case ka == kb:
			return 0
		case !ka:
			return -1
		}
		return 1
	})
	taken := explicit["irq_cpus"].Union(explicit["server_cpus"]).Union(explicit["client_cpus"])
	free := func(c Core) bool { return len(c.CPUs.Intersect(taken)) == 0 }

	// Queue count the profile asks for, and what the driver allows.
	wantQueues := 0
	if p.Queues.Combined > 0 {
		wantQueues = p.Queues.Combined
	} else if p.Queues.RX > 0 {
		wantQueues = max(p.Queues.RX, p.Queues.TX)
	}
	if wantQueues > 0 && f.Channels == nil {
		return d, fieldErr("queues", "the driver of %s has no channel operations (ETHTOOL_GCHANNELS is not supported); leave queues out", f.NIC.Name)
	}

	// IRQ CPUs.
	hasIRQs := len(f.NIC.QueueIRQs) > 0
	switch {
	case len(explicit["irq_cpus"]) > 0:
		d.IRQCPUs = explicit["irq_cpus"]
	case !hasIRQs:
		d.Derived["irq_cpus"] = "none: the NIC has no IRQs"
	default:
		n := wantQueues
		why := "one per queue asked for"
		if n == 0 {
			n = max(1, len(t.Cores)/16)
			why = fmt.Sprintf("one per 16 cores, at least 1 (the host has %d)", len(t.Cores))
		}
		n = min(n, max(1, len(t.Cores)/4)) // never more than a quarter of the host
		for _, c := range cores {
			if len(d.IRQCPUs) == n {
				break
			}
			if free(c) {
				d.IRQCPUs = append(d.IRQCPUs, c.CPUs[0])
				if len(c.CPUs) > 1 && !p.allowed(OverlapIRQServer) {
					d.ReservedCPUs = d.ReservedCPUs.Union(c.CPUs[1:])
				}
			}
		}
		slices.Sort(d.IRQCPUs)
		d.Derived["irq_cpus"] = fmt.Sprintf("%s on %s, first thread of each; %s", plural(len(d.IRQCPUs), "whole core"), nodeDesc, why)
	}
	if hasIRQs && len(d.IRQCPUs) == 0 {
		return d, fieldErr("irq_cpus", "no free core is left for the NIC's IRQs (server %s, client %s); set irq_cpus", orNone(explicit["server_cpus"]), orNone(explicit["client_cpus"]))
	}
	taken = taken.Union(d.IRQCPUs).Union(d.ReservedCPUs)

	// Queue counts.
	if f.Channels != nil {
		ch := *f.Channels
		q := QueueCounts{}
		switch {
		case p.Queues.Combined > 0:
			q.Combined = uint32(p.Queues.Combined)
		case p.Queues.RX > 0:
			q.RX, q.TX = uint32(p.Queues.RX), uint32(p.Queues.TX)
		case len(d.IRQCPUs) > 0:
			n := uint32(len(d.IRQCPUs))
			if ch.MaxCombined > 0 {
				q.Combined = min(n, ch.MaxCombined)
			} else {
				q.RX, q.TX = min(n, ch.MaxRX), min(n, ch.MaxTX)
			}
			d.Derived["queues"] = fmt.Sprintf("one per IRQ CPU (%s)", q)
		}
		if q != (QueueCounts{}) {
			if err := checkQueues(q, ch, f.NIC.Name); err != nil {
				return d, err
			}
			d.Queues = &q
		}
	}

	// Server and client CPUs: whole free cores, the NIC's node first.
	var freeCores []Core
	for _, c := range cores {
		if rest := c.CPUs.Minus(taken); len(rest) == len(c.CPUs) {
			freeCores = append(freeCores, c)
		}
	}
	onNode := func(cs []Core) []Core {
		var out []Core
		for _, c := range cs {
			if c.Node == nicNode {
				out = append(out, c)
			}
		}
		if len(out) == 0 {
			return cs
		}
		return out
	}
	cpusOf := func(cs []Core) cpus.List {
		var s cpus.List
		for _, c := range cs {
			s = s.Union(c.CPUs)
		}
		return s
	}
	d.ServerCPUs, d.ClientCPUs = explicit["server_cpus"], explicit["client_cpus"]
	switch {
	case len(d.ServerCPUs) == 0 && len(d.ClientCPUs) == 0:
		pool := onNode(freeCores)
		if len(pool) < 2 {
			pool = freeCores
		}
		half := (len(pool) + 1) / 2
		d.ServerCPUs, d.ClientCPUs = cpusOf(pool[:half]), cpusOf(pool[half:])
		d.Derived["server_cpus"] = fmt.Sprintf("first half of %s left, %s first", plural(len(pool), "free whole core"), nodeDesc)
		d.Derived["client_cpus"] = "second half of the same cores"
		if len(d.ClientCPUs) == 0 && len(d.ServerCPUs) > 0 {
			d.Notes = append(d.Notes, "too few CPUs for a separate client set: the client is left unpinned")
			d.Derived["client_cpus"] = "none: no free core left"
		}
	case len(d.ServerCPUs) == 0:
		d.ServerCPUs = cpusOf(onNode(freeCores))
		d.Derived["server_cpus"] = fmt.Sprintf("the free whole cores on %s", nodeDesc)
	case len(d.ClientCPUs) == 0:
		d.ClientCPUs = cpusOf(onNode(freeCores))
		d.Derived["client_cpus"] = fmt.Sprintf("the free whole cores on %s", nodeDesc)
		if len(d.ClientCPUs) == 0 {
			d.Notes = append(d.Notes, "no free core left for the client: the client is left unpinned")
		}
	}
	if len(d.ServerCPUs) == 0 {
		return d, fieldErr("server_cpus", "the profile leaves the server no CPU (online %s, IRQ CPUs %s, reserved SMT siblings %s, client %s)",
			t.CPUs, d.IRQCPUs, orNone(d.ReservedCPUs), orNone(d.ClientCPUs))
	}
	if err := p.checkOverlaps(d.IRQCPUs, d.ServerCPUs, d.ClientCPUs); err != nil {
		return d, err
	}
	if !p.allowed(OverlapIRQServer) {
		for _, c := range d.IRQCPUs {
			core := t.CoreOf(c)
			if core == nil {
				continue
			}
			if sib := core.CPUs.Intersect(d.ServerCPUs); len(sib) > 0 {
				return d, fieldErr("server_cpus", "CPUs %s are SMT siblings of IRQ CPU %d (core %s): interrupts and the server would share a core; pick other CPUs or add %q to allow_overlap",
					sib, c, core.CPUs, OverlapIRQServer)
			}
		}
	}

	// Each queue IRQ's CPUs. Queues beyond the new count go idle on the
	// device, so their IRQs are left alone.
	d.IRQSpread = p.IRQSpread
	if d.IRQSpread == "" {
		d.IRQSpread = SpreadRoundRobin
	}
	active := -1
	if d.Queues != nil {
		active = int(max(d.Queues.Combined, d.Queues.RX, d.Queues.TX))
	} else if f.Channels != nil {
		active = int(max(f.Channels.Combined, f.Channels.RX, f.Channels.TX))
	}
	skipped := 0
	for i, irq := range f.NIC.QueueIRQs {
		if active >= 0 && irq.Queue >= active {
			skipped++
			continue
		}
		pos := irq.Queue
		if pos < 0 {
			pos = i
		}
		pinned := d.IRQCPUs
		if d.IRQSpread == SpreadRoundRobin {
			pinned = cpus.List{d.IRQCPUs[pos%len(d.IRQCPUs)]}
		}
		d.IRQs = append(d.IRQs, IRQPin{IRQ: irq.Num, Name: irq.Name, Queue: irq.Queue, CPUs: pinned})
	}
	if !hasIRQs {
		d.Notes = append(d.Notes, fmt.Sprintf("%s has no IRQs to pin (a virtual device such as veth or loopback): IRQ pinning skipped", f.NIC.Name))
	}
	if skipped > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("%d IRQs of queues %d and above left alone: those queues are not in use", skipped, active))
	}
	if len(f.NIC.OtherIRQs) > 0 {
		var names []string
		for _, q := range f.NIC.OtherIRQs {
			names = append(names, fmt.Sprintf("%d (%s)", q.Num, q.Name))
		}
		d.Notes = append(d.Notes, "device IRQs that serve no queue, left alone: "+strings.Join(names, ", "))
	}

	// irqbalance.
	d.Irqbalance = p.Irqbalance
	if d.Irqbalance == "" {
		d.Irqbalance = IrqbalanceStopped
		d.Derived["irqbalance"] = "stopped: it would move the pinned IRQs"
	}
	if d.Irqbalance == IrqbalanceRunning {
		d.IrqbalanceBanned = explicit["irqbalance_banned_cpus"]
		if len(d.IrqbalanceBanned) == 0 {
			d.IrqbalanceBanned = d.ServerCPUs.Union(d.ClientCPUs)
			d.Derived["irqbalance_banned_cpus"] = "the server's and the client's CPUs"
		}
		for _, q := range d.IRQs {
			d.IrqbalanceBanIRQs = append(d.IrqbalanceBanIRQs, q.IRQ)
		}
		if !f.Irqbalance.Present {
			return d, fieldErr("irqbalance", "running asked for, but irqbalance.service is not present on this host (or systemd is not running)")
		}
	}
	if d.Irqbalance == IrqbalanceStopped && !f.Irqbalance.Present {
		d.Notes = append(d.Notes, "irqbalance.service is not present (or systemd is not running): nothing to stop")
	}

	names := make([]string, 0, len(p.Sysctls))
	for k := range p.Sysctls {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		d.Sysctls = append(d.Sysctls, Sysctl{Name: k, Value: p.Sysctls[k]})
	}
	if len(d.Derived) == 0 {
		d.Derived = nil
	}
	return d, nil
}

func checkQueues(q QueueCounts, ch Channels, nic string) error {
	switch {
	case q.Combined > 0 && ch.MaxCombined == 0:
		return fieldErr("queues.combined", "the driver of %s has no combined queues (max rx %d, tx %d); set rx and tx", nic, ch.MaxRX, ch.MaxTX)
	case q.Combined > ch.MaxCombined:
		return fieldErr("queues.combined", "%d is above what %s allows (%d)", q.Combined, nic, ch.MaxCombined)
	case q.RX > 0 && ch.MaxRX == 0:
		return fieldErr("queues.rx", "the driver of %s has only combined queues (max %d); set combined", nic, ch.MaxCombined)
	case q.RX > ch.MaxRX:
		return fieldErr("queues.rx", "%d is above what %s allows (%d)", q.RX, nic, ch.MaxRX)
	case q.TX > ch.MaxTX:
		return fieldErr("queues.tx", "%d is above what %s allows (%d)", q.TX, nic, ch.MaxTX)
	}
	return nil
}

func orNone(s cpus.List) string {
	if len(s) == 0 {
		return "none"
	}
	return s.String()
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
