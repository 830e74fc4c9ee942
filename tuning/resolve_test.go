package tuning

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func resolveOn(t *testing.T, fixture string, p Profile) (Desired, error) {
	t.Helper()
	h := sharedFixtureHost(t, fixture)
	facts, err := ReadFacts(bg, h, p)
	if err != nil {
		return Desired{}, err
	}
	return Resolve(p, facts)
}

func pinsString(pins []IRQPin) string {
	var parts []string
	for _, p := range pins {
		parts = append(parts, fmt.Sprintf("%d>%s", p.IRQ, p.CPUs))
	}
	return strings.Join(parts, " ")
}

func TestDerivedDefaults(t *testing.T) {
	study := loadProfile(t, "profiles/study-c8gn.yaml")
	for _, tc := range []struct {
		name, fixture string
		p             Profile
		irq, server   string
		client, kept  string
		queues        string
		pins          string // first pins, space separated; "" = none
		irqbalance    string
	}{
		{"graviton all derived", "graviton", Profile{NIC: "ens50"},
			"0-3", "4-33", "34-63", "", "combined 4", "41>0 42>1 43>2 44>3", "stopped"},
		{"graviton study profile", "graviton", study,
			"0-3", "8-23", "4-19", "", "combined 4", "41>0 42>1 43>2 44>3", "stopped"},
		{"graviton by address", "graviton", Profile{NICAddress: "10.0.1.15"},
			"0-3", "4-33", "34-63", "", "combined 4", "41>0 42>1 43>2 44>3", "stopped"},
		{"graviton 8 queues shared", "graviton", Profile{NIC: "ens50", Queues: Queues{Combined: 8}, IRQSpread: SpreadShared},
			"0-7", "8-35", "36-63", "", "combined 8", "41>0-7 42>0-7", "stopped"},
		{"graviton queues kept, IRQs given", "graviton", Profile{NIC: "ens50", IRQCPUs: "60-63", ServerCPUs: "0-15"},
			"60-63", "0-15", "16-59", "", "combined 4", "41>60 42>61 43>62 44>63", "stopped"},
		// A profile's lists are sets: queue i's IRQ goes to the i-th lowest CPU.
		{"graviton lists in any order", "graviton", Profile{NIC: "ens50", IRQCPUs: "63,60-62", ServerCPUs: "8-15,0-7"},
			"60-63", "0-15", "16-59", "", "combined 4", "41>60 42>61 43>62 44>63", "stopped"},
		// x86: IRQs on whole cores of the NIC's node (1), their siblings
		// kept idle, server and client on the rest of node 1.
		{"x86 all derived", "x86", Profile{NIC: "enp175s0f0"},
			"16-17", "18-24,50-56", "25-31,57-63", "48-49", "combined 2", "120>16 121>17", "stopped"},
		{"x86 server given", "x86", Profile{NIC: "enp175s0f0", ServerCPUs: "16-23,48-55"},
			"24-25", "16-23,48-55", "26-31,58-63", "56-57", "combined 2", "120>24 121>25", "stopped"},
		{"x86 irqbalance running", "x86", Profile{NIC: "enp175s0f0", Irqbalance: IrqbalanceRunning},
			"16-17", "18-24,50-56", "25-31,57-63", "48-49", "combined 2", "120>16 121>17", "running"},
		{"vm", "vm", Profile{NIC: "eth0"},
			"0", "1", "", "", "combined 1", "38>0 39>0", "stopped"},
		{"vm loopback", "vm", Profile{NIC: "lo"},
			"", "0", "1", "", "", "", "stopped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := resolveOn(t, tc.fixture, tc.p)
			if err != nil {
				t.Fatal(err)
			}
			q := ""
			if d.Queues != nil {
				q = d.Queues.String()
			}
			got := fmt.Sprintf("irq %s server %s client %s kept %s queues %q irqbalance %s", d.IRQCPUs, d.ServerCPUs, d.ClientCPUs, d.ReservedCPUs, q, d.Irqbalance)
			want := fmt.Sprintf("irq %s server %s client %s kept %s queues %q irqbalance %s", tc.irq, tc.server, tc.client, tc.kept, tc.queues, tc.irqbalance)
			if got != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
			if pins := pinsString(d.IRQs); !strings.HasPrefix(pins, tc.pins) || (tc.pins == "") != (pins == "") {
				t.Errorf("pins %q, want prefix %q", pins, tc.pins)
			}
			// Derived sets never overlap and never share a core between
			// IRQs and the server.
			if tc.p.ServerCPUs == "" && tc.p.ClientCPUs == "" {
				if x := d.ServerCPUs.Intersect(d.ClientCPUs).Union(d.ServerCPUs.Intersect(d.IRQCPUs)); len(x) > 0 {
					t.Errorf("derived sets overlap on %s", x)
				}
			}
		})
	}
}

func TestDerivedNotes(t *testing.T) {
	d, err := resolveOn(t, "vm", Profile{NIC: "lo"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(d.Notes, "\n"), "lo has no IRQs to pin") {
		t.Errorf("loopback: want a 'no IRQs to pin' note, got %q", d.Notes)
	}
	d, err = resolveOn(t, "vm", Profile{NIC: "eth0"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(d.Notes, "\n"), "client is left unpinned") {
		t.Errorf("2-CPU VM: want a note on the unpinned client, got %q", d.Notes)
	}
	d, err = resolveOn(t, "graviton", Profile{NIC: "ens50"})
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(d.Notes, "\n")
	if !strings.Contains(notes, "28 IRQs of queues 4 and above") || !strings.Contains(notes, "ena-mgmnt") {
		t.Errorf("graviton notes: %q", d.Notes)
	}
	d, err = resolveOn(t, "x86", Profile{NIC: "enp175s0f0", Irqbalance: IrqbalanceRunning})
	if err != nil {
		t.Fatal(err)
	}
	if d.IrqbalanceBanned.String() != "18-31,50-63" || fmt.Sprint(d.IrqbalanceBanIRQs) != "[120 121]" {
		t.Errorf("irqbalance banned %s, ban IRQs %v", d.IrqbalanceBanned, d.IrqbalanceBanIRQs)
	}
}

func TestRefusedProfiles(t *testing.T) {
	for _, tc := range []struct {
		name, fixture string
		p             Profile
		field, msg    string
	}{
		{"CPUs beyond the host", "graviton", Profile{NIC: "ens50", ServerCPUs: "60-70"}, "server_cpus", "beyond this host"},
		{"IRQ CPUs beyond the host", "vm", Profile{NIC: "eth0", IRQCPUs: "2"}, "irq_cpus", "beyond this host"},
		{"IRQs overlap server", "graviton", Profile{NIC: "ens50", IRQCPUs: "0-3", ServerCPUs: "3-10"}, "server_cpus", "overlaps irq_cpus on CPUs 3"},
		{"server overlaps client", "graviton", Profile{NIC: "ens50", ServerCPUs: "8-23", ClientCPUs: "4-19"}, "client_cpus", "server+client"},
		{"server on IRQ core's sibling", "x86", Profile{NIC: "enp175s0f0", IRQCPUs: "16", ServerCPUs: "48-50"}, "server_cpus", "SMT siblings of IRQ CPU 16"},
		{"server left no CPU", "vm", Profile{NIC: "eth0", IRQCPUs: "0", ClientCPUs: "1"}, "server_cpus", "leaves the server no CPU"},
		{"server left no CPU by derivation", "vm", Profile{NIC: "eth0", ClientCPUs: "0-1"}, "irq_cpus", "no free core"},
		{"too many queues", "graviton", Profile{NIC: "ens50", Queues: Queues{Combined: 64}}, "queues.combined", "above what ens50 allows (32)"},
		{"rx/tx on a combined-only driver", "graviton", Profile{NIC: "ens50", Queues: Queues{RX: 2, TX: 2}}, "queues.rx", "only combined"},
		{"queues on loopback", "vm", Profile{NIC: "lo", Queues: Queues{Combined: 2}}, "queues", "no channel operations"},
		{"irqbalance running where absent", "vm", Profile{NIC: "eth0", Irqbalance: IrqbalanceRunning}, "irqbalance", "not present"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := resolveOn(t, tc.fixture, tc.p)
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("want a FieldError on %s, got %v", tc.field, err)
			}
			if fe.Field != tc.field || !strings.Contains(fe.Msg, tc.msg) {
				t.Errorf("got %s: %s\nwant %s: …%s…", fe.Field, fe.Msg, tc.field, tc.msg)
			}
		})
	}
}

func TestUnknownInterface(t *testing.T) {
	h := sharedFixtureHost(t, "graviton")
	for _, p := range []Profile{{NIC: "eth7"}, {NICAddress: "10.9.9.9"}} {
		if _, err := MakePlan(bg, h, p); !errors.Is(err, ErrUnknownInterface) {
			t.Errorf("%+v: want ErrUnknownInterface, got %v", p, err)
		}
	}
}

func TestUnknownSysctl(t *testing.T) {
	h := sharedFixtureHost(t, "graviton")
	_, err := MakePlan(bg, h, Profile{NIC: "ens50", Sysctls: map[string]string{"net.core.no_such": "1"}})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "sysctls.net.core.no_such" {
		t.Errorf("want a FieldError on sysctls.net.core.no_such, got %v", err)
	}
}
