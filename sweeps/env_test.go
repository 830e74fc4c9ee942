package sweeps

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// The environment record's host facts come from the root it is given: a
// tree unlike this machine says what the tree says.
func TestLocalHostFactsFromRoot(t *testing.T) {
	root := t.TempDir()
	w := func(name, s string) {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w("proc/sys/kernel/hostname", "srv-7\n")
	w("proc/sys/kernel/osrelease", "6.1.0-fixture\n")
	w("proc/sys/kernel/arch", "aarch64\n")
	w("proc/cpuinfo", "processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd4f\n\nprocessor\t: 1\nCPU implementer\t: 0x41\nCPU part\t: 0xd4f\n")
	w("sys/devices/pci0/dev5/net/ens5/speed", "100000\n")
	w("sys/bus/pci/drivers/ena/.keep", "")
	w("sys/devices/virtual/net/lo/speed", "")
	if err := os.MkdirAll(filepath.Join(root, "sys/class/net"), 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"sys/class/net/ens5":                    "../../devices/pci0/dev5/net/ens5",
		"sys/class/net/lo":                      "../../devices/virtual/net/lo",
		"sys/devices/pci0/dev5/net/ens5/device": "../../../dev5",
		"sys/devices/pci0/dev5/driver":          "../../../bus/pci/drivers/ena",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	got := LocalHostFacts(root, "server")
	speed := 100000
	want := HostFacts{Role: "server", Hostname: "srv-7", Kernel: "6.1.0-fixture", Arch: "aarch64", CPUModel: "Neoverse-V2", CPUs: 2,
		NICs: []NICFact{{Name: "ens5", Driver: "ena", SpeedMbps: &speed}, {Name: "lo"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("facts\n got %+v\nwant %+v", got, want)
	}
	if empty := LocalHostFacts(t.TempDir(), "client"); !reflect.DeepEqual(empty, HostFacts{Role: "client"}) {
		t.Errorf("an empty root: %+v, want only the role", empty)
	}
}
