package tuning

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"

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
