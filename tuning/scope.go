package tuning

import (
	"fmt"
	"path"
	"strings"

	"github.com/linerate/linerate/infra/kernel"
)

// Scope is which of a host's settings one Host tunes. A machine (or VM)
// has a kernel of its own: everything. The netns provider's two hosts are
// network namespaces of one kernel: what the kernel keeps once —
// irqbalance, IRQ affinities, vm.*, kernel.* and the net.* sysctls it does
// not keep per namespace — must be snapshotted, set and reverted once for
// that kernel, or the second snapshot records the first one's values and
// the kernel ends tuned. Each namespace then tunes only what it owns.
type Scope string

const (
	// ScopeAll is every setting, as this process sees them: a host with a
	// kernel of its own.
	ScopeAll Scope = ""
	// ScopeKernel is every setting, from inside one network namespace of
	// a shared kernel: the kernel-wide net.* sysctls, which a namespace
	// sees read-only or not at all, are read and written in the machine's
	// own network namespace, the one that may set them.
	ScopeKernel Scope = "kernel"
	// ScopeNamespace is only what the caller's network namespace owns: the
	// NIC's queue counts and the per-namespace net.* sysctls (PerNamespace).
	// A ScopeKernel host of the same kernel tunes the rest.
	ScopeNamespace Scope = "namespace"
)

// ParseScope reads a scope by name; "" and "all" are ScopeAll.
func ParseScope(s string) (Scope, error) {
	switch Scope(s) {
	case ScopeAll, "all":
		return ScopeAll, nil
	case ScopeKernel, ScopeNamespace:
		return Scope(s), nil
	}
	return "", fmt.Errorf("tuning scope %q: want all, kernel or namespace", s)
}

// WithScope narrows h to scope s (see Scope). With ScopeKernel, on a host
// rooted in a directory, the kernel-wide net.* sysctls are reached in the
// network namespace at netns (a path such as /proc/PID/ns/net of a process
// in the machine's own namespace; "" reaches them where the caller is).
func (h Host) WithScope(s Scope, netns string) Host {
	h.Scope = s
	if d, ok := h.FS.(kernel.FS); ok && s == ScopeKernel && netns != "" {
		h.FS = kernelNetFS{FS: d, netns: netns}
	}
	return h
}

// PerNamespace says whether the caller's network namespace has sysctl
// name to itself. Only net.* sysctls can be, and which ones changes between
// kernel versions (net.core.rmem_max is missing from a namespace on older
// kernels and read-only there on recent ones), so the kernel is asked: a
// namespace sees a sysctl the kernel keeps once either not at all or
// read-only (its mode has no write bit, which binds root too), and one it
// keeps per namespace writable. In the machine's own namespace every net.*
// sysctl reads as its own.
func PerNamespace(f FS, name string) bool {
	return kernel.SysctlPerNamespace(f, kernel.SysctlPath(name))
}

// narrow keeps of d what h's scope tunes, and notes what it leaves to the
// host that tunes the kernel.
func narrow(h Host, d Desired) Desired {
	if h.Scope != ScopeNamespace {
		return d
	}
	var left []string
	if d.Irqbalance != IrqbalanceLeave {
		left = append(left, "irqbalance")
	}
	if len(d.IRQs) > 0 {
		left = append(left, "IRQ affinities")
	}
	d.Irqbalance, d.IrqbalanceBanned, d.IrqbalanceBanIRQs, d.IRQs = IrqbalanceLeave, nil, nil, nil
	var own []Sysctl
	for _, s := range d.Sysctls {
		if PerNamespace(h.FS, s.Name) {
			own = append(own, s)
		} else {
			left = append(left, s.Name)
		}
	}
	d.Sysctls = own
	if len(left) > 0 {
		d.Notes = append(d.Notes, "kernel-wide, tuned once by the host that tunes the kernel: "+strings.Join(left, ", "))
	}
	return d
}

// kernelNetFS is a kernel.FS for a process inside a network namespace that
// tunes for the whole kernel: the net.* sysctls this namespace does not
// have to itself are read and written in the machine's own namespace.
type kernelNetFS struct {
	kernel.FS
	netns string
}

func (k kernelNetFS) outside(name string) bool {
	p := path.Clean("/" + name)
	return kernel.IsNetSysctl(p) && !kernel.SysctlPerNamespace(k.FS, p)
}

// ReadFile reads name, in the machine's namespace when it is kernel-wide.
func (k kernelNetFS) ReadFile(name string) ([]byte, error) {
	if !k.outside(name) {
		return k.FS.ReadFile(name)
	}
	var b []byte
	err := inNetns(k.netns, func() (err error) {
		b, err = k.FS.ReadFile(name)
		return err
	})
	return b, err
}

// WriteFile writes name, in the machine's namespace when it is kernel-wide.
func (k kernelNetFS) WriteFile(name string, data []byte) error {
	if !k.outside(name) {
		return k.FS.WriteFile(name, data)
	}
	return inNetns(k.netns, func() error { return k.FS.WriteFile(name, data) })
}
