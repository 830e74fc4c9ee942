package tuning

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestReadTopology(t *testing.T) {
	for _, tc := range []struct {
		fixture      string
		cpus         string
		cores, nodes int
		smt          bool
		coreOf       int
		coreCPUs     string
		node1        string
	}{
		{"graviton", "0-63", 64, 1, false, 17, "17", ""},
		{"x86", "0-63", 32, 2, true, 5, "5,37", "16-31,48-63"},
		{"vm", "0-1", 2, 1, false, 1, "1", ""},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			h := sharedFixtureHost(t, tc.fixture)
			topo, err := ReadTopology(h.FS)
			if err != nil {
				t.Fatal(err)
			}
			if topo.CPUs.String() != tc.cpus || len(topo.Cores) != tc.cores || len(topo.Nodes) != tc.nodes || topo.SMT != tc.smt {
				t.Errorf("got cpus %s, %d cores, %d nodes, smt %t", topo.CPUs, len(topo.Cores), len(topo.Nodes), topo.SMT)
			}
			if c := topo.CoreOf(tc.coreOf); c == nil || c.CPUs.String() != tc.coreCPUs {
				t.Errorf("core of CPU %d = %v, want %s", tc.coreOf, c, tc.coreCPUs)
			}
			if tc.node1 != "" && topo.Nodes[1].String() != tc.node1 {
				t.Errorf("node 1 = %s, want %s", topo.Nodes[1], tc.node1)
			}
		})
	}
}

func TestReadNIC(t *testing.T) {
	for _, tc := range []struct {
		fixture, nic   string
		device, driver string
		node           int
		queueIRQs      string // "irq:queue ..." of the first and last
		nQueue         int
		other          string
	}{
		{"graviton", "ens50", "0000:00:05.0", "ena", 0, "41:0 72:31", 32, "40"},
		// ens5 must not pick up ens50's IRQs.
		{"graviton", "ens5", "0000:00:06.0", "ena", 0, "75:0 76:1", 2, "74"},
		{"x86", "enp175s0f0", "0000:af:00.0", "mlx5_core", 1, "120:0 135:15", 16, "119"},
		// virtio: the vectors belong to the PCI parent; config serves no queue.
		{"vm", "eth0", "virtio2", "virtio_net", -1, "38:0 39:0", 2, "37"},
		{"vm", "lo", "", "", -1, "", 0, ""},
	} {
		t.Run(tc.fixture+"/"+tc.nic, func(t *testing.T) {
			h := sharedFixtureHost(t, tc.fixture)
			nic, err := ReadNIC(h.FS, tc.nic)
			if err != nil {
				t.Fatal(err)
			}
			if nic.Device != tc.device || nic.Driver != tc.driver || nic.Node != tc.node {
				t.Errorf("device %q driver %q node %d", nic.Device, nic.Driver, nic.Node)
			}
			if len(nic.QueueIRQs) != tc.nQueue {
				t.Fatalf("%d queue IRQs, want %d: %v", len(nic.QueueIRQs), tc.nQueue, nic.QueueIRQs)
			}
			if tc.nQueue > 0 {
				first, last := nic.QueueIRQs[0], nic.QueueIRQs[len(nic.QueueIRQs)-1]
				got := strings.Join([]string{itoa(first.Num) + ":" + itoa(first.Queue), itoa(last.Num) + ":" + itoa(last.Queue)}, " ")
				if got != tc.queueIRQs {
					t.Errorf("first/last queue IRQs %s, want %s", got, tc.queueIRQs)
				}
			}
			var other []string
			for _, q := range nic.OtherIRQs {
				other = append(other, itoa(q.Num))
			}
			if strings.Join(other, ",") != tc.other {
				t.Errorf("other IRQs %v, want %s", other, tc.other)
			}
		})
	}
	h := sharedFixtureHost(t, "graviton")
	for _, bad := range []string{"eth9", "ens", "../../etc"} {
		if _, err := ReadNIC(h.FS, bad); !errors.Is(err, ErrUnknownInterface) {
			t.Errorf("ReadNIC(%q) = %v, want ErrUnknownInterface", bad, err)
		}
	}
	if _, err := ReadNIC(h.FS, "eth9"); err == nil || !strings.Contains(err.Error(), "ens50") {
		t.Errorf("unknown-interface error should list the host's interfaces: %v", err)
	}
}

func TestIRQNameRules(t *testing.T) {
	for _, tc := range []struct {
		irq, ifname string
		want        bool
	}{
		{"ens50-Tx-Rx-0", "ens50", true},
		{"ens50-Tx-Rx-0", "ens5", false},
		{"i40e-eth2-TxRx-3", "eth2", true},
		{"i40e-eth2-TxRx-3", "eth", false},
		{"eth0", "eth0", true},
		{"ena-mgmnt@pci:0000:00:05.0", "ens50", false},
	} {
		if got := hasIfToken(tc.irq, tc.ifname); got != tc.want {
			t.Errorf("hasIfToken(%q, %q) = %t", tc.irq, tc.ifname, got)
		}
	}
	for name, want := range map[string]int{"ens50-Tx-Rx-12": 12, "virtio2-input.0": 0, "mlx5_comp3@pci:0000:af:00.0": 3, "ena-mgmnt@pci:0000:00:05.0": -1} {
		if got := queueIndex(name); got != want {
			t.Errorf("queueIndex(%q) = %d, want %d", name, got, want)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
