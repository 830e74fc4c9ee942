package tuning

import (
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/infra/kernel"
)

// IRQ is one interrupt line as /proc/interrupts names it.
type IRQ struct {
	Num   int    `json:"irq"`
	Name  string `json:"name"`
	Queue int    `json:"queue"` // queue index parsed from the name; -1 if none
}

// NIC is a network interface and the interrupts that serve its queues.
type NIC struct {
	Name   string `json:"name"`
	Device string `json:"device,omitempty"` // e.g. 0000:00:05.0, virtio2; empty for virtual devices
	Driver string `json:"driver,omitempty"`
	Node   int    `json:"node"` // NUMA node of the device; -1 when the kernel does not say
	// QueueIRQs take the queues' traffic; these are what a profile pins.
	QueueIRQs []IRQ `json:"queue_irqs"`
	// OtherIRQs belong to the device but serve no queue (ENA's management
	// IRQ, virtio's config IRQ); they are reported and left alone.
	OtherIRQs []IRQ `json:"other_irqs,omitempty"`
}

// ErrUnknownInterface is returned for an interface the host does not have.
var ErrUnknownInterface = kernel.ErrUnknownInterface

// ReadNIC finds an interface and its queue IRQs. The device's MSI vectors
// (infra/kernel's ReadNetDevice) say which IRQs belong to it; the names in
// /proc/interrupts say which serve queues: ENA's "<if>-Tx-Rx-N", i40e's
// "i40e-<if>-TxRx-N", virtio's "virtioK-input.N", mlx5's "mlx5_compN". A
// virtual device (veth, loopback) has none.
func ReadNIC(f FS, name string) (NIC, error) {
	nic := NIC{Name: name, Node: -1}
	dev, err := kernel.ReadNetDevice(f, name)
	if err != nil || dev.Device == "" {
		return nic, err
	}
	nic.Device, nic.Driver, nic.Node = dev.Device, dev.Driver, dev.Node
	lines, err := kernel.ReadInterrupts(f)
	if err != nil {
		return nic, err
	}
	for _, l := range lines {
		if l.Name == "" {
			continue // allocated, but no handler: serves nothing now
		}
		named := hasIfToken(l.Name, name)
		if !named && !slices.Contains(dev.MSI, l.IRQ) {
			continue
		}
		irq := IRQ{Num: l.IRQ, Name: l.Name, Queue: queueIndex(l.Name)}
		if named || isQueueIRQName(l.Name, nic.Device) {
			nic.QueueIRQs = append(nic.QueueIRQs, irq)
		} else {
			nic.OtherIRQs = append(nic.OtherIRQs, irq)
		}
	}
	slices.SortFunc(nic.QueueIRQs, func(a, b IRQ) int {
		if a.Queue != b.Queue {
			return a.Queue - b.Queue
		}
		return a.Num - b.Num
	})
	return nic, nil
}

// hasIfToken reports whether an IRQ name carries the interface name as a
// dash- or underscore-delimited token ("ens50-Tx-Rx-0", "i40e-eth2-TxRx-1")
// so that ens5 does not match ens50's IRQs.
func hasIfToken(irqName, ifname string) bool {
	for i := 0; ; {
		j := strings.Index(irqName[i:], ifname)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(ifname)
		before := j == 0 || irqName[j-1] == '-' || irqName[j-1] == '_'
		after := end == len(irqName) || irqName[end] == '-' || irqName[end] == '_'
		if before && after {
			return true
		}
		i = j + 1
	}
}

// isQueueIRQName reports whether a device IRQ not named after the interface
// still serves a queue: virtio's input/output vectors and mlx5's completion
// vectors do; config, management and async-event vectors do not.
func isQueueIRQName(irqName, device string) bool {
	n, _, _ := strings.Cut(irqName, "@")
	if rest, ok := strings.CutPrefix(n, device+"-"); ok && device != "" {
		return strings.HasPrefix(rest, "input") || strings.HasPrefix(rest, "output")
	}
	return strings.HasPrefix(n, "mlx5_comp")
}

// queueIndex is the number that ends an IRQ name ("ens50-Tx-Rx-12" → 12,
// "virtio2-input.0" → 0), ignoring an "@pci:…" suffix; -1 when there is none.
func queueIndex(irqName string) int {
	n, _, _ := strings.Cut(irqName, "@")
	i := len(n)
	for i > 0 && n[i-1] >= '0' && n[i-1] <= '9' {
		i--
	}
	if i == len(n) {
		return -1
	}
	v, err := strconv.Atoi(n[i:])
	if err != nil {
		return -1
	}
	return v
}
