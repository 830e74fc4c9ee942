package tuning

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
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
var ErrUnknownInterface = errors.New("unknown interface")

// ReadNIC finds an interface and its queue IRQs. The device's MSI vectors
// (msi_irqs under the device, or under its PCI parent for virtio) say which
// IRQs belong to it; the names in /proc/interrupts say which serve queues:
// ENA's "<if>-Tx-Rx-N", i40e's "i40e-<if>-TxRx-N", virtio's "virtioK-input.N",
// mlx5's "mlx5_compN". A virtual device (veth, loopback) has none.
func ReadNIC(f FS, name string) (NIC, error) {
	nic := NIC{Name: name, Node: -1}
	if name == "" || strings.ContainsAny(name, "/ ") {
		return nic, fmt.Errorf("%w %q", ErrUnknownInterface, name)
	}
	if _, err := f.ReadDir("/sys/class/net/" + name); err != nil {
		have, _ := f.ReadDir("/sys/class/net")
		return nic, fmt.Errorf("%w %q (this host has %s)", ErrUnknownInterface, name, strings.Join(have, ", "))
	}
	dev, err := resolvePath(f, "/sys/class/net/"+name+"/device")
	if err != nil {
		return nic, nil // virtual: no device, no IRQs
	}
	nic.Device = path.Base(dev)
	if drv, err := f.Readlink(dev + "/driver"); err == nil {
		nic.Driver = path.Base(drv)
	}
	// virtio devices sit under their PCI function, which owns the vectors
	// and the NUMA node.
	msi := map[int]bool{}
	for _, d := range []string{dev, path.Dir(dev)} {
		names, err := f.ReadDir(d + "/msi_irqs")
		if err != nil {
			continue
		}
		for _, n := range names {
			if v, err := strconv.Atoi(n); err == nil {
				msi[v] = true
			}
		}
		if s, err := readString(f, d+"/numa_node"); err == nil {
			if v, err := strconv.Atoi(s); err == nil && v >= 0 {
				nic.Node = v
			}
		}
		break
	}
	if nic.Node < 0 {
		if s, err := readString(f, dev+"/numa_node"); err == nil {
			if v, err := strconv.Atoi(s); err == nil && v >= 0 {
				nic.Node = v
			}
		}
	}

	raw, err := f.ReadFile("/proc/interrupts")
	if err != nil {
		return nic, fmt.Errorf("read /proc/interrupts: %w", err)
	}
	lines, err := kernel.ParseInterrupts(bytes.NewReader(raw))
	if err != nil {
		return nic, fmt.Errorf("parse /proc/interrupts: %w", err)
	}
	for _, l := range lines {
		if l.Name == "" {
			continue // allocated, but no handler: serves nothing now
		}
		named := hasIfToken(l.Name, name)
		if !named && !msi[l.IRQ] {
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

// resolvePath follows symlinks inside the FS, component by component, the
// way the kernel resolves /sys/class/net/eth0/device on a real host.
func resolvePath(f FS, name string) (string, error) {
	parts := strings.Split(strings.Trim(path.Clean(name), "/"), "/")
	cur := "/"
	for hops := 0; len(parts) > 0; {
		p := parts[0]
		parts = parts[1:]
		next := path.Join(cur, p)
		target, err := f.Readlink(next)
		if err != nil {
			if _, serr := f.ReadDir(next); serr != nil {
				if _, rerr := f.ReadFile(next); rerr != nil && errors.Is(rerr, fs.ErrNotExist) {
					return "", fmt.Errorf("resolve %s: %w", name, fs.ErrNotExist)
				}
			}
			cur = next
			continue
		}
		if hops++; hops > 40 {
			return "", fmt.Errorf("resolve %s: too many links", name)
		}
		if !strings.HasPrefix(target, "/") {
			target = path.Join(cur, target)
		}
		parts = append(strings.Split(strings.Trim(path.Clean(target), "/"), "/"), parts...)
		cur = "/"
	}
	return cur, nil
}
