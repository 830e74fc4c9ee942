package tuning

import (
	"strconv"
	"strings"
	"testing"

	"github.com/linerate/linerate/infra/kernel"
)

// bumpLast adds d to the last number of a sysctl value ("4096 131072
// 6291456" → "4096 131072 6291457"): a different value the kernel takes.
func bumpLast(t *testing.T, v string, d int) string {
	t.Helper()
	f := strings.Fields(v)
	n, err := strconv.Atoi(f[len(f)-1])
	if err != nil {
		t.Fatalf("value %q does not end in a number", v)
	}
	f[len(f)-1] = strconv.Itoa(n + d)
	return strings.Join(f, " ")
}

// Which net.* sysctls a namespace has to itself is the kernel's to say,
// and differs between kernel versions. PerNamespace, asked inside a fresh namespace, must agree with
// what the kernel does: a value written there under a sysctl it calls per
// namespace leaves the machine's alone, and a change of the machine's
// value under one it calls kernel-wide shows in the namespace (or the
// namespace does not have it). Kernel-wide values are changed for a moment
// and put back at once.
func TestPerNamespaceMatchesTheKernel(t *testing.T) {
	needRoot(t)
	ns := "/run/netns/" + vethNetns(t)
	live := kernel.FS{Root: "/"}
	in := func(f func() error) {
		t.Helper()
		if err := inNetns(ns, f); err != nil {
			t.Fatal(err)
		}
	}
	kinds := map[bool]int{}
	for _, name := range []string{
		"net.core.somaxconn", "net.core.rmem_max", "net.core.wmem_max", "net.core.rmem_default",
		"net.core.netdev_max_backlog", "net.core.optmem_max", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
		"net.ipv4.tcp_mem", "net.ipv4.ip_local_port_range", "net.unix.max_dgram_qlen", "vm.swappiness",
	} {
		machine, err := kernel.ReadSysctl(live, name)
		if err != nil {
			t.Logf("%s: not on this kernel", name)
			continue
		}
		var per bool
		var seen string
		var seenErr error
		in(func() error {
			per = PerNamespace(live, name)
			seen, seenErr = kernel.ReadSysctl(live, name)
			return nil
		})
		kinds[per]++
		if per {
			alt := bumpLast(t, seen, 1)
			in(func() error { return writeValue(live, kernel.SysctlPath(name), alt) })
			if got, _ := kernel.ReadSysctl(live, name); got != machine {
				writeValue(live, kernel.SysctlPath(name), machine)
				t.Errorf("%s: called per namespace, but a write in the namespace changed the machine's value to %q", name, got)
			}
			continue
		}
		alt := bumpLast(t, machine, 1)
		if err := writeValue(live, kernel.SysctlPath(name), alt); err != nil {
			t.Fatal(err)
		}
		in(func() error { seen, seenErr = kernel.ReadSysctl(live, name); return nil })
		if err := writeValue(live, kernel.SysctlPath(name), machine); err != nil {
			t.Fatalf("put %s back to %s: %v", name, machine, err)
		}
		if seenErr == nil && normalizeSysctl(seen) != normalizeSysctl(alt) {
			t.Errorf("%s: called kernel-wide, but the namespace kept %q when the machine's became %q", name, seen, alt)
		}
	}
	t.Logf("per namespace: %d, kernel-wide: %d", kinds[true], kinds[false])
	if kinds[true] == 0 || kinds[false] == 0 {
		t.Errorf("want both kinds among the sysctls tried, got %v", kinds)
	}
}

// A ScopeKernel host inside a namespace reaches a kernel-wide net.* sysctl
// in the machine's namespace: it reads the machine's value and its write
// lands there. A per-namespace one stays in the namespace.
func TestScopeKernelSetsKernelWideNetSysctlsOnTheMachine(t *testing.T) {
	needRoot(t)
	ns := "/run/netns/" + vethNetns(t)
	hold, err := OpenMachineNetns()
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	machineNS := hold.Path
	live := kernel.FS{Root: "/"}
	var wide string
	for _, name := range []string{"net.core.rmem_max", "net.core.wmem_max", "net.ipv4.tcp_mem", "net.core.netdev_max_backlog"} {
		var per bool
		if err := inNetns(ns, func() error { per = PerNamespace(live, name); return nil }); err != nil {
			t.Fatal(err)
		}
		if _, err := kernel.ReadSysctl(live, name); err == nil && !per {
			wide = name
			break
		}
	}
	if wide == "" {
		t.Skip("every net.* sysctl tried is per namespace on this kernel")
	}
	machine, err := kernel.ReadSysctl(live, wide)
	if err != nil {
		t.Fatal(err)
	}
	alt := bumpLast(t, machine, 4096)
	t.Cleanup(func() {
		if got, _ := kernel.ReadSysctl(live, wide); got != machine {
			writeValue(live, kernel.SysctlPath(wide), machine)
		}
	})
	h := Host{FS: live}.WithScope(ScopeKernel, machineNS)
	var somaxconn, read string
	err = inNetns(ns, func() error {
		var err error
		if read, err = kernel.ReadSysctl(h.FS, wide); err != nil {
			return err
		}
		if err := writeValue(h.FS, kernel.SysctlPath(wide), alt); err != nil {
			return err
		}
		if err := writeValue(h.FS, kernel.SysctlPath("net.core.somaxconn"), "1021"); err != nil {
			return err
		}
		somaxconn, err = kernel.ReadSysctl(live, "net.core.somaxconn")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if read != machine {
		t.Errorf("%s read in the namespace through the kernel scope: %q, the machine's is %q", wide, read, machine)
	}
	if got, _ := kernel.ReadSysctl(live, wide); normalizeSysctl(got) != normalizeSysctl(alt) {
		t.Errorf("%s on the machine after the write: %q, want %q", wide, got, alt)
	}
	if somaxconn != "1021" {
		t.Errorf("somaxconn in the namespace: %q, want 1021 (written there, not on the machine)", somaxconn)
	}
}
