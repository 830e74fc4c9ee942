package tuning

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/linerate/linerate/infra/kernel"
	"github.com/linerate/linerate/lab/cpus"
)

// State is everything apply may change, as it is on the host. A Snapshot
// holds one taken before apply; revert writes it back.
type State struct {
	NIC string `json:"nic"`
	// Irqbalance is nil when the profile leaves irqbalance alone.
	Irqbalance *IrqbalanceState `json:"irqbalance,omitempty"`
	// Queues is nil when the driver has no channel operations.
	Queues  *QueueCounts  `json:"queues,omitempty"`
	IRQs    []IRQAffinity `json:"irqs,omitempty"`
	Sysctls []Sysctl      `json:"sysctls,omitempty"`
}

// IRQAffinity is one IRQ's smp_affinity_list.
type IRQAffinity struct {
	IRQ  int       `json:"irq"`
	Name string    `json:"name"`
	CPUs cpus.List `json:"cpus"`
}

// SnapshotVersion changes when Snapshot's fields change meaning.
const SnapshotVersion = 1

// Snapshot is the host's state before apply, stored (as JSON) by the CLI and
// in the sweeps run record; Revert restores it.
type Snapshot struct {
	Version int       `json:"version"`
	Taken   time.Time `json:"taken"`
	Profile Profile   `json:"profile"`
	// Scope is the part of the host it covers (absent: all of it).
	Scope Scope `json:"scope,omitempty"`
	State State `json:"state"`
}

// scope says which parts of the host a state covers.
type scope struct {
	nic        string
	irqbalance bool
	queues     bool
	irqs       []IRQ
	sysctls    []string
}

// scopeFor covers what a plan touches: all the NIC's queue IRQs (also the
// ones apply leaves alone, since a queue change can move them; none for a
// ScopeNamespace host), the queue counts, irqbalance unless left alone, and
// the profile's sysctls (as narrowed to the host's scope).
func scopeFor(h Host, f Facts, d Desired) scope {
	sc := scope{nic: f.NIC.Name, irqbalance: d.Irqbalance != IrqbalanceLeave, queues: f.Channels != nil, irqs: f.NIC.QueueIRQs}
	if h.Scope == ScopeNamespace {
		sc.irqs = nil // the kernel's, not the namespace's
	}
	for _, s := range d.Sysctls {
		sc.sysctls = append(sc.sysctls, s.Name)
	}
	return sc
}

// scopeOf covers exactly what a stored state holds.
func scopeOf(s State) scope {
	sc := scope{nic: s.NIC, irqbalance: s.Irqbalance != nil, queues: s.Queues != nil}
	for _, q := range s.IRQs {
		sc.irqs = append(sc.irqs, IRQ{Num: q.IRQ, Name: q.Name})
	}
	for _, x := range s.Sysctls {
		sc.sysctls = append(sc.sysctls, x.Name)
	}
	return sc
}

func capture(ctx context.Context, h Host, sc scope) (State, error) {
	s := State{NIC: sc.nic}
	if sc.irqbalance {
		ib, err := readIrqbalance(ctx, h)
		if err != nil {
			return s, err
		}
		s.Irqbalance = &ib
	}
	if sc.queues {
		ch, err := h.Channels.Channels(ctx, sc.nic)
		if err != nil {
			return s, err
		}
		q := ch.Counts()
		s.Queues = &q
	}
	for _, q := range sc.irqs {
		cpus, err := kernel.ReadIRQAffinity(h.FS, q.Num)
		if err != nil {
			return s, err
		}
		s.IRQs = append(s.IRQs, IRQAffinity{IRQ: q.Num, Name: q.Name, CPUs: cpus})
	}
	for _, name := range sc.sysctls {
		v, err := kernel.ReadSysctl(h.FS, name)
		if err != nil {
			return s, err
		}
		s.Sysctls = append(s.Sysctls, Sysctl{Name: name, Value: v})
	}
	return s, nil
}

// normalizeSysctl makes "4096 131072 6291456" equal the kernel's
// tab-separated "4096\t131072\t6291456\n".
func normalizeSysctl(v string) string { return strings.Join(strings.Fields(v), " ") }

// Change is one write apply will make.
type Change struct {
	What   string `json:"what"`   // irqbalance, irqbalance-config, queues, irq, sysctl
	Object string `json:"object"` // the unit, interface, IRQ or sysctl
	Path   string `json:"path,omitempty"`
	From   string `json:"from"`
	To     string `json:"to"`
}

func (c Change) String() string {
	where := c.Object
	if c.Path != "" {
		where += " (" + c.Path + ")"
	}
	return fmt.Sprintf("%-17s %s: %s -> %s", c.What, where, c.From, c.To)
}

// diff lists the changes that take the current state to the desired one.
// Verify uses the same list: after apply it must be empty.
func diff(cur State, d Desired) []Change {
	var out []Change
	if ib := cur.Irqbalance; ib != nil && ib.Present {
		switch d.Irqbalance {
		case IrqbalanceStopped:
			if ib.Active {
				out = append(out, Change{What: "irqbalance", Object: IrqbalanceUnit, From: "active", To: "stopped"})
			}
		case IrqbalanceRunning:
			old := ""
			if ib.Config != nil {
				old = *ib.Config
			}
			want := irqbalanceConfig(old, d.IrqbalanceBanned, d.IrqbalanceBanIRQs)
			if want != old {
				out = append(out, Change{What: "irqbalance-config", Object: IrqbalanceUnit, Path: ib.ConfigPath,
					From: configSummary(old), To: configSummary(want)})
			}
			switch {
			case !ib.Active:
				out = append(out, Change{What: "irqbalance", Object: IrqbalanceUnit, From: "stopped", To: "active"})
			case want != old:
				out = append(out, Change{What: "irqbalance", Object: IrqbalanceUnit, From: "active", To: "restarted"})
			}
		}
	}
	if d.Queues != nil && cur.Queues != nil && !queuesMatch(*cur.Queues, *d.Queues) {
		out = append(out, Change{What: "queues", Object: cur.NIC, From: cur.Queues.String(), To: d.Queues.String()})
	}
	have := map[int]cpus.List{}
	for _, q := range cur.IRQs {
		have[q.IRQ] = q.CPUs
	}
	for _, pin := range d.IRQs {
		if got, ok := have[pin.IRQ]; !ok || !got.Equal(pin.CPUs) {
			out = append(out, Change{What: "irq", Object: fmt.Sprintf("IRQ %d %s", pin.IRQ, pin.Name), Path: kernel.IRQAffinityPath(pin.IRQ),
				From: orNone(got), To: pin.CPUs.String()})
		}
	}
	cs := map[string]string{}
	for _, s := range cur.Sysctls {
		cs[s.Name] = s.Value
	}
	for _, s := range d.Sysctls {
		if got := normalizeSysctl(cs[s.Name]); got != normalizeSysctl(s.Value) {
			out = append(out, Change{What: "sysctl", Object: s.Name, Path: kernel.SysctlPath(s.Name), From: got, To: normalizeSysctl(s.Value)})
		}
	}
	return out
}

// queuesMatch compares only the counts the desired state sets.
func queuesMatch(cur, want QueueCounts) bool {
	return (want.Combined == 0 || cur.Combined == want.Combined) &&
		(want.RX == 0 || cur.RX == want.RX) && (want.TX == 0 || cur.TX == want.TX)
}

// irqbalanceConfig returns the config file with the banned CPUs and the
// pinned IRQs set, keeping every other line and any other arguments.
func irqbalanceConfig(old string, banned cpus.List, banIRQs []int) string {
	args := ""
	if v, ok := envValue(old, "IRQBALANCE_ARGS"); ok {
		for _, a := range strings.Fields(v) {
			if !strings.HasPrefix(a, "--banirq=") {
				args += a + " "
			}
		}
	}
	for _, irq := range banIRQs {
		args += fmt.Sprintf("--banirq=%d ", irq)
	}
	out := setEnv(old, "IRQBALANCE_BANNED_CPULIST", banned.String())
	return setEnv(out, "IRQBALANCE_ARGS", `"`+strings.TrimSpace(args)+`"`)
}

// envValue returns the value of an uncommented KEY=value line.
func envValue(content, key string) (string, bool) {
	for _, l := range strings.Split(content, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), key+"="); ok {
			return strings.Trim(v, `"'`), true
		}
	}
	return "", false
}

// setEnv replaces the KEY= line or appends one.
func setEnv(content, key, value string) string {
	line := key + "=" + value
	lines := strings.Split(content, "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), key+"=") {
			lines[i] = line
			return strings.Join(lines, "\n")
		}
	}
	if content != "" && !strings.HasSuffix(content, "\n") {
		content += "\n"
	}
	return content + line + "\n"
}

func configSummary(c string) string {
	var parts []string
	for _, k := range []string{"IRQBALANCE_BANNED_CPULIST", "IRQBALANCE_ARGS"} {
		if v, ok := envValue(c, k); ok {
			parts = append(parts, k+"="+v)
		}
	}
	if len(parts) == 0 {
		return "(not set)"
	}
	return strings.Join(parts, " ")
}
