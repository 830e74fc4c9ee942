package tuning

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// One network namespace of a shared kernel tunes only what it owns. On the
// c8gn-like fixture, the study's profile plus a vm.* sysctl, a writable
// net.* one and a read-only net.* one (as a namespace sees a kernel-wide
// sysctl): the whole host plans all of it; a ScopeNamespace host plans the
// queue count and the writable net.* sysctl only, notes the rest, applies
// and snapshots only that, and its revert restores the tree.
func TestScopeNamespaceTunesOnlyWhatTheNamespaceOwns(t *testing.T) {
	h, dir := fixtureHost(t, "graviton")
	if err := os.MkdirAll(filepath.Join(dir, "proc/sys/vm"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFixtureFile(t, dir, "proc/sys/vm/swappiness", "60\n")
	if err := os.Chmod(filepath.Join(dir, "proc/sys/net/core/wmem_max"), 0o444); err != nil {
		t.Fatal(err)
	}
	p := withSysctls(loadProfile(t, "profiles/study-c8gn.yaml"),
		map[string]string{"net.core.rmem_max": "268435456", "net.core.wmem_max": "268435456", "vm.swappiness": "10"})
	kinds := func(pl Plan) []string {
		var out []string
		for _, c := range pl.Changes {
			k := c.What
			if c.What == "sysctl" {
				k += " " + c.Object
			}
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
		slices.Sort(out)
		return out
	}
	all, err := MakePlan(bg, h, p)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"irq", "irqbalance", "queues", "sysctl net.core.rmem_max", "sysctl net.core.wmem_max", "sysctl vm.swappiness"}
	if got := kinds(all); !slices.Equal(got, want) {
		t.Errorf("whole host plans %v, want %v", got, want)
	}

	ns := h.WithScope(ScopeNamespace, "")
	pl, err := MakePlan(bg, ns, p)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kinds(pl), []string{"queues", "sysctl net.core.rmem_max"}; !slices.Equal(got, want) {
		t.Errorf("namespace plans %v, want %v", got, want)
	}
	note := strings.Join(pl.Desired.Notes, "\n")
	for _, left := range []string{"irqbalance", "IRQ affinities", "net.core.wmem_max", "vm.swappiness"} {
		if !strings.Contains(note, left) {
			t.Errorf("the notes do not say %s is left to the kernel's host:\n%s", left, note)
		}
	}

	before := readTree(t, dir)
	snap, rep, err := Apply(bg, ns, p)
	if err != nil || !rep.OK {
		t.Fatalf("apply: %v, %+v", err, rep)
	}
	if snap.Scope != ScopeNamespace || snap.State.Irqbalance != nil || len(snap.State.IRQs) != 0 ||
		len(snap.State.Sysctls) != 1 || snap.State.Sysctls[0].Name != "net.core.rmem_max" {
		t.Errorf("the snapshot covers more than the namespace: %+v", snap)
	}
	tuned := readTree(t, dir)
	var changed []string
	for name, b := range before {
		if tuned[name] != b {
			changed = append(changed, name)
		}
	}
	slices.Sort(changed)
	if want := []string{"_fixture/ethtool/ens50.json", "proc/sys/net/core/rmem_max"}; !slices.Equal(changed, want) {
		t.Errorf("apply changed %v, want only %v", changed, want)
	}
	if err := Revert(bg, ns, snap); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(before, readTree(t, dir)) {
		t.Error("revert did not restore the tree")
	}
}

func TestParseScope(t *testing.T) {
	for in, want := range map[string]Scope{"": ScopeAll, "all": ScopeAll, "kernel": ScopeKernel, "namespace": ScopeNamespace} {
		if got, err := ParseScope(in); err != nil || got != want {
			t.Errorf("ParseScope(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseScope("host"); err == nil || !strings.Contains(err.Error(), `"host"`) {
		t.Errorf("ParseScope(host): %v", err)
	}
}
