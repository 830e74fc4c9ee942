package tuning

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/linerate/linerate/infra/kernel"
)

// Plan is what apply would do, computed without changing anything.
type Plan struct {
	Profile Profile  `json:"profile"`
	Facts   Facts    `json:"facts"`
	Current State    `json:"current"`
	Desired Desired  `json:"desired"`
	Changes []Change `json:"changes"`
}

// MakePlan reads the host, resolves the profile against it and lists the
// changes. It only reads.
func MakePlan(ctx context.Context, h Host, p Profile) (Plan, error) {
	pl := Plan{Profile: p}
	if err := p.Validate(); err != nil {
		return pl, err
	}
	var err error
	if pl.Facts, err = ReadFacts(ctx, h, p); err != nil {
		return pl, err
	}
	if pl.Desired, err = Resolve(p, pl.Facts); err != nil {
		return pl, err
	}
	pl.Desired = narrow(h, pl.Desired)
	for _, s := range pl.Desired.Sysctls {
		if _, err := kernel.ReadSysctl(h.FS, s.Name); err != nil {
			return pl, fieldErr("sysctls."+s.Name, "no such sysctl on this host (%s): %v", kernel.SysctlPath(s.Name), errors.Unwrap(err))
		}
	}
	if pl.Current, err = capture(ctx, h, scopeFor(h, pl.Facts, pl.Desired)); err != nil {
		return pl, err
	}
	pl.Changes = diff(pl.Current, pl.Desired)
	return pl, nil
}

// WriteText renders the plan for a person: the host, current and desired
// state, then the changes.
func (pl Plan) WriteText(w io.Writer) error {
	var b strings.Builder
	f, d := pl.Facts, pl.Desired
	smt := "no SMT"
	if f.Topology.SMT {
		smt = "SMT"
	}
	fmt.Fprintf(&b, "host: %d CPUs (%s), %d cores, %s, %d NUMA node(s)\n", len(f.Topology.CPUs), f.Topology.CPUs, len(f.Topology.Cores), smt, len(f.Topology.Nodes))
	dev := f.NIC.Device
	if dev == "" {
		dev = "virtual"
	}
	node := "unknown"
	if f.NIC.Node >= 0 {
		node = fmt.Sprint(f.NIC.Node)
	}
	fmt.Fprintf(&b, "nic:  %s (%s, driver %s, NUMA node %s), %d queue IRQs\n", f.NIC.Name, dev, orDash(f.NIC.Driver), node, len(f.NIC.QueueIRQs))
	if f.Channels != nil {
		c := f.Channels
		fmt.Fprintf(&b, "      queues now %s (max combined %d, rx %d, tx %d)\n", c.Counts(), c.MaxCombined, c.MaxRX, c.MaxTX)
	} else {
		b.WriteString("      queues: the driver has no channel operations\n")
	}
	if ib := pl.Current.Irqbalance; ib != nil {
		fmt.Fprintf(&b, "irqbalance: present %t, active %t (config %s)\n", ib.Present, ib.Active, ib.ConfigPath)
	}
	b.WriteString("\ndesired:\n")
	fmt.Fprintf(&b, "  irqbalance   %s", d.Irqbalance)
	if d.Irqbalance == IrqbalanceRunning {
		fmt.Fprintf(&b, " (banned CPUs %s)", d.IrqbalanceBanned)
	}
	b.WriteString("\n")
	q := "unchanged"
	if d.Queues != nil {
		q = d.Queues.String()
	}
	fmt.Fprintf(&b, "  queues       %s\n", q)
	fmt.Fprintf(&b, "  irq cpus     %s (%s, %d IRQs)\n", orNone(d.IRQCPUs), d.IRQSpread, len(d.IRQs))
	fmt.Fprintf(&b, "  server cpus  %s\n", orNone(d.ServerCPUs))
	fmt.Fprintf(&b, "  client cpus  %s\n", orNone(d.ClientCPUs))
	if len(d.ReservedCPUs) > 0 {
		fmt.Fprintf(&b, "  kept idle    %s (SMT siblings of IRQ CPUs)\n", d.ReservedCPUs)
	}
	for _, s := range d.Sysctls {
		fmt.Fprintf(&b, "  sysctl       %s = %s\n", s.Name, s.Value)
	}
	if len(d.Derived) > 0 {
		b.WriteString("\nderived:\n")
		keys := make([]string, 0, len(d.Derived))
		for k := range d.Derived {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "  %-22s %s\n", k, d.Derived[k])
		}
	}
	for _, n := range d.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	if len(pl.Changes) == 0 {
		b.WriteString("\nchanges: none, the host already matches the profile\n")
	} else {
		fmt.Fprintf(&b, "\nchanges (%d):\n", len(pl.Changes))
		for _, c := range pl.Changes {
			fmt.Fprintf(&b, "  %s\n", c)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
