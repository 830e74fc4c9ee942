package kernel

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/linerate/linerate/lab/cpus"
)

// fx0 is a PCI device (fx-dev, driver ena, NUMA node 1) with three MSI
// vectors; lo is virtual.
func TestFixtureNetDevice(t *testing.T) {
	for _, tc := range []struct {
		name string
		want NetDevice
	}{
		{"fx0", NetDevice{Device: "fx-dev", Driver: "ena", Node: 1, MSI: []int{40, 41, 42}}},
		{"lo", NetDevice{Node: -1}},
	} {
		got, err := ReadNetDevice(fixture, tc.name)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "fx0/..", "no0"} {
		_, err := ReadNetDevice(fixture, bad)
		if !errors.Is(err, ErrUnknownInterface) {
			t.Errorf("%q: %v, want ErrUnknownInterface", bad, err)
		}
	}
	if _, err := ReadNetDevice(fixture, "no0"); err == nil || !strings.Contains(err.Error(), "(this host has fx0, lo)") {
		t.Errorf("an unknown interface names the ones the host has: %v", err)
	}
}

func TestFixtureInterrupts(t *testing.T) {
	lines, err := ReadInterrupts(fixture)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range lines {
		got = append(got, l.Name)
	}
	if want := []string{"timer", "ena-mgmnt@pci:fx-dev", "fx0-Tx-Rx-0", "fx0-Tx-Rx-1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("interrupts %q, want %q", got, want)
	}
	if _, err := ReadInterrupts(FS{Root: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "read /proc/interrupts") {
		t.Errorf("no /proc/interrupts: %v", err)
	}
}

// An affinity list is read ascending, whatever order the file has.
func TestFixtureIRQAffinity(t *testing.T) {
	for irq, want := range map[int]cpus.List{41: {0, 1}, 42: {0, 2}} {
		if got, err := ReadIRQAffinity(fixture, irq); err != nil || !got.Equal(want) {
			t.Errorf("IRQ %d: %v, %v; want %v", irq, got, err, want)
		}
	}
	if _, err := ReadIRQAffinity(fixture, 40); err == nil || !strings.Contains(err.Error(), "IRQ 40") {
		t.Errorf("an IRQ without the file: %v", err)
	}
}

func TestSysctl(t *testing.T) {
	for _, tc := range []struct{ name, path, want string }{
		{"net.core.somaxconn", "/proc/sys/net/core/somaxconn", "4096"},
		{"net.ipv4.tcp_rmem", "/proc/sys/net/ipv4/tcp_rmem", "4096\t131072\t6291456"}, // tabs kept
		{"net/ipv4/conf/eth0.10/rp_filter", "/proc/sys/net/ipv4/conf/eth0.10/rp_filter", ""},
	} {
		if p := SysctlPath(tc.name); p != tc.path {
			t.Errorf("SysctlPath(%s) = %s, want %s", tc.name, p, tc.path)
		}
		got, err := ReadSysctl(fixture, tc.name)
		if tc.want == "" {
			if err == nil || !strings.Contains(err.Error(), "read sysctl "+tc.name) {
				t.Errorf("%s: %q, %v; want an error naming it", tc.name, got, err)
			}
		} else if err != nil || got != tc.want {
			t.Errorf("%s = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// A namespace has a net.* sysctl to itself when it may write it: the
// mode answers, and nothing outside net.* is ever its own.
func TestSysctlPerNamespace(t *testing.T) {
	root := t.TempDir()
	for p, mode := range map[string]os.FileMode{
		"/proc/sys/net/core/somaxconn": 0o644, "/proc/sys/net/core/rmem_max": 0o444, "/proc/sys/vm/swappiness": 0o644,
	} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte("1\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	f := FS{Root: root}
	for name, want := range map[string]bool{"net.core.somaxconn": true, "net.core.rmem_max": false, "vm.swappiness": false, "net.core.no_such": false} {
		if got := SysctlPerNamespace(f, SysctlPath(name)); got != want {
			t.Errorf("%s: per namespace %v, want %v", name, got, want)
		}
	}
	if !IsNetSysctl("/proc/sys/net/../net/core/x") || IsNetSysctl("/proc/sys/net/../vm/x") {
		t.Error("IsNetSysctl reads the cleaned path")
	}
}

// The same readers on this machine's /proc and /sys: the paths are the
// kernel's.
func TestRealNetReaders(t *testing.T) {
	if lines, err := ReadInterrupts(here); err != nil || len(lines) == 0 {
		t.Errorf("/proc/interrupts: %d lines, %v", len(lines), err)
	}
	if lo, err := ReadNetDevice(here, "lo"); err != nil || lo.Device != "" || lo.Node != -1 {
		t.Errorf("lo: %+v, %v; want a virtual interface", lo, err)
	}
	if v, err := ReadSysctl(here, "net.core.somaxconn"); err != nil || strings.Trim(v, "0123456789") != "" || v == "" {
		t.Errorf("net.core.somaxconn = %q, %v; want a number", v, err)
	}
}
