package kernel

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// LinkReader is a Reader that also reads a symlink as stored: what
// resolving /sys/class/net/NAME/device inside a root takes.
type LinkReader interface {
	Reader
	Readlink(name string) (string, error)
}

// ErrUnknownInterface is an interface the host does not have.
var ErrUnknownInterface = errors.New("unknown interface")

// NetDevice is what /sys/class/net says of an interface's device.
type NetDevice struct {
	Device string // the device's directory name (0000:00:05.0, virtio2); "" for a virtual interface
	Driver string
	Node   int   // NUMA node of the device; -1 when the kernel does not say
	MSI    []int // the device's MSI vectors (msi_irqs), ascending
}

// ReadNetDevice reads the device behind interface name. Its MSI vectors
// (msi_irqs under the device, or under its PCI parent for virtio) say
// which interrupts belong to it. A virtual interface (veth, loopback) has
// no device: a NetDevice with Node -1 and no error. An interface the
// host lacks is ErrUnknownInterface, naming the ones it has.
func ReadNetDevice(f LinkReader, name string) (NetDevice, error) {
	nd := NetDevice{Node: -1}
	if name == "" || strings.ContainsAny(name, "/ ") {
		return nd, fmt.Errorf("%w %q", ErrUnknownInterface, name)
	}
	if _, err := f.ReadDir("/sys/class/net/" + name); err != nil {
		have, _ := f.ReadDir("/sys/class/net")
		return nd, fmt.Errorf("%w %q (this host has %s)", ErrUnknownInterface, name, strings.Join(have, ", "))
	}
	dev, err := resolve(f, "/sys/class/net/"+name+"/device")
	if err != nil {
		return nd, nil // virtual: no device, no IRQs
	}
	nd.Device = path.Base(dev)
	if drv, err := f.Readlink(dev + "/driver"); err == nil {
		nd.Driver = path.Base(drv)
	}
	// virtio devices sit under their PCI function, which owns the vectors
	// and the NUMA node.
	for _, d := range []string{dev, path.Dir(dev)} {
		names, err := f.ReadDir(d + "/msi_irqs")
		if err != nil {
			continue
		}
		for _, n := range names {
			if v, err := strconv.Atoi(n); err == nil {
				nd.MSI = append(nd.MSI, v)
			}
		}
		nd.Node = numaNode(f, d)
		break
	}
	if nd.Node < 0 {
		nd.Node = numaNode(f, dev)
	}
	slices.Sort(nd.MSI)
	return nd, nil
}

// numaNode is a device directory's numa_node; -1 when absent or unknown.
func numaNode(f Reader, dir string) int {
	s, err := ReadValue(f, dir+"/numa_node")
	if err != nil {
		return -1
	}
	if v, err := strconv.Atoi(s); err == nil && v >= 0 {
		return v
	}
	return -1
}

// ReadInterrupts reads and parses /proc/interrupts.
func ReadInterrupts(f Reader) ([]InterruptLine, error) {
	raw, err := f.ReadFile("/proc/interrupts")
	if err != nil {
		return nil, fmt.Errorf("read /proc/interrupts: %w", err)
	}
	lines, err := ParseInterrupts(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parse /proc/interrupts: %w", err)
	}
	return lines, nil
}

// resolve follows symlinks inside f, component by component, the way the
// kernel resolves /sys/class/net/eth0/device on a real host.
func resolve(f LinkReader, name string) (string, error) {
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
