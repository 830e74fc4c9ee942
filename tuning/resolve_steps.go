package tuning

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/linerate/linerate/lab/cpus"
)

// Resolve decides every field of the profile for this host. It refuses CPUs
// the host does not have, sets that overlap without allow_overlap, IRQ CPUs
// sharing an SMT core with the server, and a server left with no CPU.
func Resolve(p Profile, f Facts) (Desired, error) {
	if err := p.Validate(); err != nil {
		return Desired{}, err
	}
	r := &resolver{p: p, f: f, t: f.Topology, d: Desired{NIC: f.NIC.Name, Derived: map[string]string{}}}
	for _, step := range []func() error{
		r.explicitCPUs, r.preferNICNode, r.irqCPUs, r.queues, r.serverClientCPUs,
		r.checkCPUs, r.irqPins, r.irqbalance, r.sysctls,
	} {
		if err := step(); err != nil {
			return r.d, err
		}
	}
	if len(r.d.Derived) == 0 {
		r.d.Derived = nil
	}
	return r.d, nil
}

// resolver is one Resolve under way: the profile, the host's facts, and
// what its steps decided so far.
type resolver struct {
	p Profile
	f Facts
	t Topology
	d Desired
	// explicit are the profile's own CPU sets, by field name.
	explicit map[string]cpus.List
	// nicNode is the preferred NUMA node (nodeDesc names it in notes),
	// cores the host's cores with that node's first.
	nicNode  int
	nodeDesc string
	cores    []Core
	// taken is the CPUs the sets decided so far hold.
	taken cpus.List
	// wantQueues is the queue count the profile asks for (0: none).
	wantQueues int
}

// explicitCPUs reads the profile's CPU sets and refuses CPUs beyond the host.
func (r *resolver) explicitCPUs() error {
	r.explicit = map[string]cpus.List{}
	for _, e := range []struct{ name, v string }{
		{"irq_cpus", r.p.IRQCPUs}, {"server_cpus", r.p.ServerCPUs}, {"client_cpus", r.p.ClientCPUs},
		{"irqbalance_banned_cpus", r.p.IrqbalanceBannedCPUs},
	} {
		s, _ := parseCPUSet(e.v) // Validate parsed it
		if beyond := s.Minus(r.t.CPUs); len(beyond) > 0 {
			return fieldErr(e.name, "CPUs %s are beyond this host (online CPUs: %s)", beyond, r.t.CPUs)
		}
		r.explicit[e.name] = s
	}
	r.taken = r.explicit["irq_cpus"].Union(r.explicit["server_cpus"]).Union(r.explicit["client_cpus"])
	return nil
}

// preferNICNode orders the cores by preference: the NIC's NUMA node
// first, so that interrupts, server and client share its memory and its
// PCIe root.
func (r *resolver) preferNICNode() error {
	r.nicNode = r.f.NIC.Node
	r.nodeDesc = fmt.Sprintf("the NIC's NUMA node %d", r.nicNode)
	if _, ok := r.t.Nodes[r.nicNode]; !ok {
		r.nicNode = r.t.NodeIDs()[0]
		r.nodeDesc = fmt.Sprintf("NUMA node %d", r.nicNode)
		if len(r.t.Nodes) > 1 {
			r.d.Notes = append(r.d.Notes, fmt.Sprintf("the kernel does not say which NUMA node %s is on: node %d is preferred", r.f.NIC.Name, r.nicNode))
		}
	}
	r.cores = slices.Clone(r.t.Cores)
	slices.SortStableFunc(r.cores, func(a, b Core) int {
		ka, kb := a.Node != r.nicNode, b.Node != r.nicNode
		switch {
		case ka == kb:
			return 0
		case !ka:
			return -1
		}
		return 1
	})
	return nil
}

// irqCPUs picks the CPUs of the NIC's IRQs: the profile's, else the first
// thread of whole free cores, one per queue asked for or per 16 cores.
func (r *resolver) irqCPUs() error {
	p, d, t := r.p, &r.d, r.t
	if p.Queues.Combined > 0 {
		r.wantQueues = p.Queues.Combined
	} else if p.Queues.RX > 0 {
		r.wantQueues = max(p.Queues.RX, p.Queues.TX)
	}
	if r.wantQueues > 0 && r.f.Channels == nil {
		return fieldErr("queues", "the driver of %s has no channel operations (ETHTOOL_GCHANNELS is not supported); leave queues out", r.f.NIC.Name)
	}
	hasIRQs := len(r.f.NIC.QueueIRQs) > 0
	switch {
	case len(r.explicit["irq_cpus"]) > 0:
		d.IRQCPUs = r.explicit["irq_cpus"]
	case !hasIRQs:
		d.Derived["irq_cpus"] = "none: the NIC has no IRQs"
	default:
		n := r.wantQueues
		why := "one per queue asked for"
		if n == 0 {
			n = max(1, len(t.Cores)/16)
			why = fmt.Sprintf("one per 16 cores, at least 1 (the host has %d)", len(t.Cores))
		}
		n = min(n, max(1, len(t.Cores)/4)) // never more than a quarter of the host
		for _, c := range r.cores {
			if len(d.IRQCPUs) == n {
				break
			}
			if len(c.CPUs.Intersect(r.taken)) == 0 {
				d.IRQCPUs = append(d.IRQCPUs, c.CPUs[0])
				if len(c.CPUs) > 1 && !p.allowed(OverlapIRQServer) {
					d.ReservedCPUs = d.ReservedCPUs.Union(c.CPUs[1:])
				}
			}
		}
		slices.Sort(d.IRQCPUs)
		d.Derived["irq_cpus"] = fmt.Sprintf("%s on %s, first thread of each; %s", plural(len(d.IRQCPUs), "whole core"), r.nodeDesc, why)
	}
	if hasIRQs && len(d.IRQCPUs) == 0 {
		return fieldErr("irq_cpus", "no free core is left for the NIC's IRQs (server %s, client %s); set irq_cpus", orNone(r.explicit["server_cpus"]), orNone(r.explicit["client_cpus"]))
	}
	r.taken = r.taken.Union(d.IRQCPUs).Union(d.ReservedCPUs)
	return nil
}

// queues decides the queue counts: the profile's, else one per IRQ CPU
// within what the driver allows.
func (r *resolver) queues() error {
	if r.f.Channels == nil {
		return nil
	}
	p, d := r.p, &r.d
	ch := *r.f.Channels
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
	if q == (QueueCounts{}) {
		return nil
	}
	if err := checkQueues(q, ch, r.f.NIC.Name); err != nil {
		return err
	}
	d.Queues = &q
	return nil
}

// serverClientCPUs gives the server and the client whole free cores, the
// NIC's node first, where the profile names no set of theirs.
func (r *resolver) serverClientCPUs() error {
	d := &r.d
	var freeCores []Core
	for _, c := range r.cores {
		if rest := c.CPUs.Minus(r.taken); len(rest) == len(c.CPUs) {
			freeCores = append(freeCores, c)
		}
	}
	d.ServerCPUs, d.ClientCPUs = r.explicit["server_cpus"], r.explicit["client_cpus"]
	switch {
	case len(d.ServerCPUs) == 0 && len(d.ClientCPUs) == 0:
		pool := r.onNode(freeCores)
		if len(pool) < 2 {
			pool = freeCores
		}
		half := (len(pool) + 1) / 2
		d.ServerCPUs, d.ClientCPUs = cpusOf(pool[:half]), cpusOf(pool[half:])
		d.Derived["server_cpus"] = fmt.Sprintf("first half of %s left, %s first", plural(len(pool), "free whole core"), r.nodeDesc)
		d.Derived["client_cpus"] = "second half of the same cores"
		if len(d.ClientCPUs) == 0 && len(d.ServerCPUs) > 0 {
			d.Notes = append(d.Notes, "too few CPUs for a separate client set: the client is left unpinned")
			d.Derived["client_cpus"] = "none: no free core left"
		}
	case len(d.ServerCPUs) == 0:
		d.ServerCPUs = cpusOf(r.onNode(freeCores))
		d.Derived["server_cpus"] = fmt.Sprintf("the free whole cores on %s", r.nodeDesc)
	case len(d.ClientCPUs) == 0:
		d.ClientCPUs = cpusOf(r.onNode(freeCores))
		d.Derived["client_cpus"] = fmt.Sprintf("the free whole cores on %s", r.nodeDesc)
		if len(d.ClientCPUs) == 0 {
			d.Notes = append(d.Notes, "no free core left for the client: the client is left unpinned")
		}
	}
	return nil
}

// onNode is the cores of cs on the preferred node, or all of cs when none is.
func (r *resolver) onNode(cs []Core) []Core {
	var out []Core
	for _, c := range cs {
		if c.Node == r.nicNode {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return cs
	}
	return out
}

// cpusOf is every CPU of cs.
func cpusOf(cs []Core) cpus.List {
	var s cpus.List
	for _, c := range cs {
		s = s.Union(c.CPUs)
	}
	return s
}

// checkCPUs refuses a server with no CPU, overlaps the profile does not
// allow, and IRQ CPUs that share a core with the server.
func (r *resolver) checkCPUs() error {
	d := &r.d
	if len(d.ServerCPUs) == 0 {
		return fieldErr("server_cpus", "the profile leaves the server no CPU (online %s, IRQ CPUs %s, reserved SMT siblings %s, client %s)",
			r.t.CPUs, d.IRQCPUs, orNone(d.ReservedCPUs), orNone(d.ClientCPUs))
	}
	if err := r.p.checkOverlaps(d.IRQCPUs, d.ServerCPUs, d.ClientCPUs); err != nil {
		return err
	}
	if r.p.allowed(OverlapIRQServer) {
		return nil
	}
	for _, c := range d.IRQCPUs {
		core := r.t.CoreOf(c)
		if core == nil {
			continue
		}
		if sib := core.CPUs.Intersect(d.ServerCPUs); len(sib) > 0 {
			return fieldErr("server_cpus", "CPUs %s are SMT siblings of IRQ CPU %d (core %s): interrupts and the server would share a core; pick other CPUs or add %q to allow_overlap",
				sib, c, core.CPUs, OverlapIRQServer)
		}
	}
	return nil
}

// irqPins gives each queue IRQ its CPUs. Queues beyond the new count go
// idle on the device, so their IRQs are left alone.
func (r *resolver) irqPins() error {
	d, f := &r.d, r.f
	d.IRQSpread = r.p.IRQSpread
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
	if len(f.NIC.QueueIRQs) == 0 {
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
	return nil
}

// irqbalance decides the service's state and, running, what it must leave
// alone.
func (r *resolver) irqbalance() error {
	d := &r.d
	d.Irqbalance = r.p.Irqbalance
	if d.Irqbalance == "" {
		d.Irqbalance = IrqbalanceStopped
		d.Derived["irqbalance"] = "stopped: it would move the pinned IRQs"
	}
	present := r.f.Irqbalance.Present
	if d.Irqbalance == IrqbalanceRunning {
		d.IrqbalanceBanned = r.explicit["irqbalance_banned_cpus"]
		if len(d.IrqbalanceBanned) == 0 {
			d.IrqbalanceBanned = d.ServerCPUs.Union(d.ClientCPUs)
			d.Derived["irqbalance_banned_cpus"] = "the server's and the client's CPUs"
		}
		for _, q := range d.IRQs {
			d.IrqbalanceBanIRQs = append(d.IrqbalanceBanIRQs, q.IRQ)
		}
		if !present {
			return fieldErr("irqbalance", "running asked for, but irqbalance.service is not present on this host (or systemd is not running)")
		}
	}
	if d.Irqbalance == IrqbalanceStopped && !present {
		d.Notes = append(d.Notes, "irqbalance.service is not present (or systemd is not running): nothing to stop")
	}
	return nil
}

// sysctls are the profile's, sorted by name.
func (r *resolver) sysctls() error {
	names := make([]string, 0, len(r.p.Sysctls))
	for k := range r.p.Sysctls {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		r.d.Sysctls = append(r.d.Sysctls, Sysctl{Name: k, Value: r.p.Sysctls[k]})
	}
	return nil
}
