package tuning

import (
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/linerate/linerate/lab/cpus"
)

// TestRoundTrip runs plan, apply, verify and revert on a copy of each
// fixture host and checks that every step did what it said: plan changed
// nothing, apply made the planned changes and verified, a second plan is
// empty, and revert brings back the snapshot field for field (and the tree
// byte for byte).
func TestRoundTrip(t *testing.T) {
	sysctls := map[string]string{"net.core.rmem_max": "268435456", "net.ipv4.tcp_rmem": "4096 131072 134217728"}
	for _, tc := range []struct {
		name, fixture string
		p             Profile
		changes       int
		check         map[string]string // file → content after apply
		irqbalance    bool              // active after apply
		queues        string
	}{
		{"graviton study", "graviton", withSysctls(loadProfile(t, "profiles/study-c8gn.yaml"), sysctls), 7,
			map[string]string{"proc/irq/41/smp_affinity_list": "0", "proc/irq/44/smp_affinity_list": "3",
				"proc/irq/48/smp_affinity_list": "0", // queue 7: not in use, left as found
				"proc/sys/net/ipv4/tcp_rmem":    "4096 131072 134217728"}, false, "combined 4"},
		{"x86 derived", "x86", withSysctls(Profile{NIC: "enp175s0f0"}, sysctls), 6,
			map[string]string{"proc/irq/120/smp_affinity_list": "16", "proc/irq/121/smp_affinity_list": "17",
				"proc/irq/122/smp_affinity_list": "4", "proc/sys/net/core/rmem_max": "268435456"}, false, "combined 2"},
		{"x86 irqbalance running", "x86", Profile{NIC: "enp175s0f0", Irqbalance: IrqbalanceRunning}, 5,
			map[string]string{"proc/irq/120/smp_affinity_list": "16",
				"etc/default/irqbalance": "# irqbalance is a daemon process that distributes interrupts across\n#IRQBALANCE_BANNED_CPULIST=\nIRQBALANCE_ARGS=\"--policyscript=/etc/irqbalance.d/policy --banirq=120 --banirq=121\"\nIRQBALANCE_BANNED_CPULIST=18-31,50-63"},
			true, "combined 2"},
		{"vm", "vm", withSysctls(Profile{NIC: "eth0"}, sysctls), 3,
			map[string]string{"proc/irq/38/smp_affinity_list": "0", "proc/irq/39/smp_affinity_list": "0"}, false, "combined 1"},
		{"vm loopback", "vm", withSysctls(Profile{NIC: "lo"}, sysctls), 2,
			map[string]string{"proc/sys/net/core/rmem_max": "268435456"}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, dir := fixtureHost(t, tc.fixture)
			before := readTree(t, dir)

			pl, err := MakePlan(bg, h, tc.p)
			if err != nil {
				t.Fatal(err)
			}
			if len(pl.Changes) != tc.changes {
				t.Errorf("plan has %d changes, want %d:\n%v", len(pl.Changes), tc.changes, pl.Changes)
			}
			if !maps.Equal(before, readTree(t, dir)) {
				t.Fatal("plan changed the host")
			}

			snap, rep, err := Apply(bg, h, tc.p)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK || len(rep.Drifts) != 0 {
				t.Errorf("verify after apply: %+v", rep)
			}
			if !reflect.DeepEqual(snap.State, pl.Current) {
				t.Errorf("snapshot differs from the plan's current state:\n%+v\n%+v", snap.State, pl.Current)
			}
			for file, want := range tc.check {
				if got := readFixtureFile(t, dir, file); got != want {
					t.Errorf("%s after apply = %q, want %q", file, got, want)
				}
			}
			if st, _ := h.Services.Status(bg, IrqbalanceUnit); st.Present && st.Active != tc.irqbalance {
				t.Errorf("irqbalance active = %t after apply, want %t", st.Active, tc.irqbalance)
			}
			if ch, err := h.Channels.Channels(bg, pl.Desired.NIC); err == nil && ch.Counts().String() != tc.queues {
				t.Errorf("queues after apply = %s, want %s", ch.Counts(), tc.queues)
			}
			rep, err = Verify(bg, h, tc.p)
			if err != nil || !rep.OK {
				t.Errorf("verify: %+v, %v", rep, err)
			}
			again, err := MakePlan(bg, h, tc.p)
			if err != nil || len(again.Changes) != 0 {
				t.Errorf("plan after apply: %v, %v", again.Changes, err)
			}

			// The snapshot goes through JSON, as it does via the CLI and
			// the run record.
			raw, err := json.Marshal(snap)
			if err != nil {
				t.Fatal(err)
			}
			var stored Snapshot
			if err := json.Unmarshal(raw, &stored); err != nil {
				t.Fatal(err)
			}
			if err := Revert(bg, h, stored); err != nil {
				t.Fatal(err)
			}
			after, err := CaptureLike(bg, h, stored)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(after, snap.State) {
				t.Errorf("state after revert differs from the snapshot:\n got %+v\nwant %+v", after, snap.State)
			}
			if got := readTree(t, dir); !maps.Equal(before, got) {
				for k := range before {
					if before[k] != got[k] {
						t.Errorf("%s: %q before apply, %q after revert", k, before[k], got[k])
					}
				}
			}
			if err := Revert(bg, h, stored); err != nil {
				t.Errorf("second revert: %v", err)
			}
		})
	}
}

func withSysctls(p Profile, s map[string]string) Profile {
	p.Sysctls = s
	return p
}

// TestVerifyDrift changes the host behind apply's back the ways the issue
// names: IRQs piled onto one core (as after an ENA reset with irqbalance
// off), irqbalance started again, a queue count changed, a sysctl reset.
func TestVerifyDrift(t *testing.T) {
	h, dir := fixtureHost(t, "graviton")
	p := withSysctls(loadProfile(t, "profiles/study-c8gn.yaml"), map[string]string{"net.core.rmem_max": "268435456"})
	if _, _, err := Apply(bg, h, p); err != nil {
		t.Fatal(err)
	}
	writeFixtureFile(t, dir, "proc/irq/42/smp_affinity_list", "0\n")
	writeFixtureFile(t, dir, "proc/irq/43/smp_affinity_list", "0\n")
	writeFixtureFile(t, dir, "proc/sys/net/core/rmem_max", "212992\n")
	if err := h.Services.Start(bg, IrqbalanceUnit); err != nil {
		t.Fatal(err)
	}
	if err := h.Channels.SetChannels(bg, "ens50", QueueCounts{Combined: 8}); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(bg, h, p)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range rep.Drifts {
		got = append(got, d.String())
	}
	want := []string{
		"irqbalance irqbalance.service: want stopped, got active",
		"queues ens50: want combined 4, got combined 8",
		"irq IRQ 42 ens50-Tx-Rx-1 (/proc/irq/42/smp_affinity_list): want 1, got 0",
		"irq IRQ 43 ens50-Tx-Rx-2 (/proc/irq/43/smp_affinity_list): want 2, got 0",
		"sysctl net.core.rmem_max (/proc/sys/net/core/rmem_max): want 268435456, got 212992",
	}
	if rep.OK || !reflect.DeepEqual(got, want) {
		t.Errorf("drifts:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The runner stores the report as JSON with each cell.
	raw, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(raw, &back); err != nil || len(back.Drifts) != 5 || back.OK || back.ServerCPUs.String() != "8-23" {
		t.Errorf("report JSON round trip: %s → %+v, %v", raw, back, err)
	}
	if !strings.Contains(string(raw), `"what":"irq"`) {
		t.Errorf("report JSON lacks drift fields: %s", raw)
	}
}

// refusingFS is the kernel saying no to one file, as it does with EIO for
// managed IRQs or EINVAL for offline CPUs.
type refusingFS struct {
	FS
	path string
	err  error
}

func (r refusingFS) WriteFile(name string, data []byte) error {
	if name == r.path {
		return r.err
	}
	return r.FS.WriteFile(name, data)
}

func TestApplyRollsBackWhenRefused(t *testing.T) {
	for _, tc := range []struct {
		path, value string
		p           Profile
	}{
		{"/proc/irq/43/smp_affinity_list", "2", loadProfile(t, "profiles/study-c8gn.yaml")},
		{"/proc/sys/net/core/wmem_max", "1", withSysctls(loadProfile(t, "profiles/study-c8gn.yaml"), map[string]string{"net.core.rmem_max": "268435456", "net.core.wmem_max": "1"})},
	} {
		t.Run(tc.path, func(t *testing.T) {
			h, dir := fixtureHost(t, "graviton")
			before := readTree(t, dir)
			h.FS = refusingFS{FS: h.FS, path: tc.path, err: syscall.EINVAL}
			_, _, err := Apply(bg, h, tc.p)
			var re *RefusedError
			if !errors.As(err, &re) || re.Path != tc.path || re.Value != tc.value || !errors.Is(err, syscall.EINVAL) {
				t.Fatalf("want a refusal naming %s and %q, got %v", tc.path, tc.value, err)
			}
			if !strings.Contains(err.Error(), "rolled back") {
				t.Errorf("error should say it rolled back: %v", err)
			}
			if got := readTree(t, dir); !maps.Equal(before, got) {
				for k := range before {
					if before[k] != got[k] {
						t.Errorf("%s: %q before, %q after the rollback", k, before[k], got[k])
					}
				}
			}
			if st, _ := h.Services.Status(bg, IrqbalanceUnit); !st.Active {
				t.Error("irqbalance not running again after the rollback")
			}
			if ch, _ := h.Channels.Channels(bg, "ens50"); ch.Combined != 32 {
				t.Errorf("queues after rollback = %d, want 32", ch.Combined)
			}
		})
	}
}

func TestRevertRefusesOtherVersion(t *testing.T) {
	h, _ := fixtureHost(t, "vm")
	if err := Revert(bg, h, Snapshot{Version: 99}); err == nil || !strings.Contains(err.Error(), "version 99") {
		t.Errorf("got %v", err)
	}
}

// Snapshots written before the CPU lists became one kept them as list
// text ("0-1"); they still read, and revert what they recorded.
func TestSnapshotWithListText(t *testing.T) {
	h, root := fixtureHost(t, "vm")
	old := `{"version":1,"taken":"2026-01-01T00:00:00Z","profile":{"nic":"eth0"},"state":{"nic":"eth0",` +
		`"irqs":[{"irq":38,"name":"virtio2-input.0","cpus":"0-1"}]}}`
	var snap Snapshot
	if err := json.Unmarshal([]byte(old), &snap); err != nil {
		t.Fatal(err)
	}
	if got := snap.State.IRQs[0].CPUs; !got.Equal(cpus.Must("0-1")) {
		t.Fatalf("IRQ 38's CPUs read as %v", got)
	}
	if err := Revert(bg, h, snap); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "proc/irq/38/smp_affinity_list")); err != nil || strings.TrimSpace(string(b)) != "0-1" {
		t.Errorf("IRQ 38 after revert: %q, %v", b, err)
	}
}

func TestExpandFixtureRejectsEscapes(t *testing.T) {
	if err := ExpandFixture([]byte("-- ../x --\nhi\n"), t.TempDir()); err == nil {
		t.Error("accepted a name climbing out of the directory")
	}
	var pe *fs.PathError
	if err := ExpandFixtureFile("testdata/none.txtar", t.TempDir()); !errors.As(err, &pe) {
		t.Errorf("missing archive: %v", err)
	}
}

// TestApplyWithSavesFirst: the snapshot reaches the hook before any change,
// and a hook that fails stops apply with the host untouched.
func TestApplyWithSavesFirst(t *testing.T) {
	h, dir := fixtureHost(t, "graviton")
	before := readTree(t, dir)
	p := loadProfile(t, "profiles/study-c8gn.yaml")
	var saved []Snapshot
	snap, _, err := ApplyWith(bg, h, p, func(s Snapshot) error {
		if got := readTree(t, dir); !maps.Equal(before, got) {
			t.Error("the host changed before the snapshot was saved")
		}
		saved = append(saved, s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(saved) != 1 || !reflect.DeepEqual(saved[0], snap) {
		t.Errorf("saved %d snapshots; first equals the returned one: %t", len(saved), len(saved) > 0 && reflect.DeepEqual(saved[0], snap))
	}

	h2, dir2 := fixtureHost(t, "graviton")
	before2 := readTree(t, dir2)
	_, _, err = ApplyWith(bg, h2, p, func(Snapshot) error { return syscall.ENOSPC })
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("want the save error, got %v", err)
	}
	if got := readTree(t, dir2); !maps.Equal(before2, got) {
		t.Error("apply changed the host although the snapshot could not be saved")
	}
	if st, _ := h2.Services.Status(bg, IrqbalanceUnit); !st.Active {
		t.Error("apply stopped irqbalance although the snapshot could not be saved")
	}
}
