package kernel

import (
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/linerate/linerate/lab/cpus"
)

// SysctlPath maps net.core.rmem_max to /proc/sys/net/core/rmem_max. A name
// may use '/' as separator too (sysctl(8) accepts both); interface names
// with dots are written with '/' then (net/ipv4/conf/eth0.10/rp_filter).
func SysctlPath(name string) string {
	if strings.Contains(name, "/") {
		return "/proc/sys/" + name
	}
	return "/proc/sys/" + strings.ReplaceAll(name, ".", "/")
}

// ReadSysctl reads sysctl name as the kernel prints it (tabs in tcp_rmem
// kept, the trailing newline dropped), so a value read can be written
// back exactly.
func ReadSysctl(f Reader, name string) (string, error) {
	b, err := f.ReadFile(SysctlPath(name))
	if err != nil {
		return "", fmt.Errorf("read sysctl %s: %w", name, err)
	}
	return strings.TrimRight(string(b), "\n"), nil
}

// IsNetSysctl says whether p (a path as SysctlPath makes them) is a net.*
// sysctl: the only ones a network namespace can have to itself.
func IsNetSysctl(p string) bool {
	return strings.HasPrefix(path.Clean("/"+p), "/proc/sys/net/")
}

// SysctlPerNamespace says whether the network namespace f is read in has
// the sysctl at p to itself. Only net.* sysctls can be, and which ones
// changes between kernel versions, so the file's mode is asked: a
// namespace sees a sysctl the kernel keeps once either not at all or
// read-only (no write bit, which binds root too), and one it keeps per
// namespace writable. A view of f that cannot stat says yes.
func SysctlPerNamespace(f Reader, p string) bool {
	if !IsNetSysctl(p) {
		return false
	}
	st, ok := f.(interface {
		Stat(name string) (fs.FileInfo, error)
	})
	if !ok {
		return true
	}
	fi, err := st.Stat(p)
	return err == nil && fi.Mode().Perm()&0o200 != 0
}

// IRQAffinityPath is the file holding an IRQ's CPUs as a list.
func IRQAffinityPath(irq int) string { return fmt.Sprintf("/proc/irq/%d/smp_affinity_list", irq) }

// ReadIRQAffinity reads the CPUs an IRQ may run on, ascending.
func ReadIRQAffinity(f Reader, irq int) (cpus.List, error) {
	s, err := ReadValue(f, IRQAffinityPath(irq))
	if err != nil {
		return nil, fmt.Errorf("read affinity of IRQ %d: %w", irq, err)
	}
	l, err := cpuSet(s)
	if err != nil {
		return nil, fmt.Errorf("read affinity of IRQ %d: %s: %w", irq, IRQAffinityPath(irq), err)
	}
	return l, nil
}
