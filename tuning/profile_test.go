package tuning

import (
	"errors"
	"strings"
	"testing"
)

func TestProfileValidate(t *testing.T) {
	for _, tc := range []struct {
		p     Profile
		field string // "" = valid
	}{
		{Profile{NIC: "ens50"}, ""},
		{Profile{NICAddress: "198.18.0.2"}, ""},
		{Profile{}, "nic"},
		{Profile{NIC: "ens50", NICAddress: "198.18.0.2"}, "nic_address"},
		{Profile{NIC: "a/b"}, "nic"},
		{Profile{NIC: "averyveryverylongname"}, "nic"},
		{Profile{NICAddress: "10.0.0"}, "nic_address"},
		{Profile{NIC: "e", Irqbalance: "off"}, "irqbalance"},
		{Profile{NIC: "e", IrqbalanceBannedCPUs: "1"}, "irqbalance_banned_cpus"},
		{Profile{NIC: "e", Irqbalance: "running", IrqbalanceBannedCPUs: "1-3"}, ""},
		{Profile{NIC: "e", Queues: Queues{Combined: -1}}, "queues"},
		{Profile{NIC: "e", Queues: Queues{Combined: 4, RX: 4}}, "queues"},
		{Profile{NIC: "e", Queues: Queues{RX: 4}}, "queues"},
		{Profile{NIC: "e", IRQSpread: "spray"}, "irq_spread"},
		{Profile{NIC: "e", IRQCPUs: "0-x"}, "irq_cpus"},
		{Profile{NIC: "e", ServerCPUs: "3-1"}, "server_cpus"},
		{Profile{NIC: "e", ClientCPUs: ","}, "client_cpus"},
		{Profile{NIC: "e", IRQCPUs: "0-3,2"}, "irq_cpus"}, // a CPU twice (merged before the lists became one)
		{Profile{NIC: "e", ServerCPUs: "0-9223372036854775807"}, "server_cpus"},
		{Profile{NIC: "e", IRQCPUs: "0-3", ClientCPUs: "2-5"}, "client_cpus"},
		{Profile{NIC: "e", IRQCPUs: "0-3", ClientCPUs: "2-5", AllowOverlap: []string{"client+irq"}}, ""},
		{Profile{NIC: "e", AllowOverlap: []string{"irq+nic"}}, "allow_overlap"},
		{Profile{NIC: "e", Sysctls: map[string]string{"net..core": "1"}}, "sysctls"},
		{Profile{NIC: "e", Sysctls: map[string]string{"net.core.rmem_max": ""}}, "sysctls.net.core.rmem_max"},
		{Profile{NIC: "e", Sysctls: map[string]string{"net.core.rmem_max": "1\n2"}}, "sysctls.net.core.rmem_max"},
	} {
		err := tc.p.Validate()
		var fe *FieldError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%+v: unexpected error %v", tc.p, err)
		case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field):
			t.Errorf("%+v: want an error naming %s, got %v", tc.p, tc.field, err)
		}
	}
}

func TestParseProfile(t *testing.T) {
	p, err := ParseProfile([]byte("nic: ens50\nqueues: {combined: 4}\nsysctls:\n  net.core.rmem_max: \"268435456\"\n"))
	if err != nil || p.NIC != "ens50" || p.Queues.Combined != 4 || p.Sysctls["net.core.rmem_max"] != "268435456" {
		t.Fatalf("got %+v, %v", p, err)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"nic: ens50\nirqbalance: off\n", "line 2: irqbalance: \"off\": want stopped, running or leave"},
		{"nic: ens50\n\nserver_cpus: 4-x\n", "line 3: server_cpus:"},
		{"nic: ens50\nsysctls:\n  net.core.rmem_max: \"\"\n", "line 3: sysctls.net.core.rmem_max"},
		{"nic: ens50\nserver_cpu: 4\n", "line 2: server_cpu: unknown field (accepted: nic, nic_address, irqbalance,"},
		{"nic: [ens50]\n", "line 1: cannot unmarshal"},
		{"nic: ens50\nqueues: 4\n", "line 2: queues: want a mapping, e.g. {combined: 4}"},
		{"nic: ens50\nallow_overlap: server+client\n", "line 2: allow_overlap: want a list"},
		{"", "empty profile"},
	} {
		_, err := ParseProfile([]byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseProfile(%q) = %v, want …%s…", tc.yaml, err, tc.want)
		}
	}
}
