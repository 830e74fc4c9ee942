package kernel

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseInterrupts(t *testing.T) {
	in := `           CPU0       CPU1       CPU2
  11:       1000          0          0     GICv3  27 Level     arch_timer
  41:          5          0          0   ITS-MSI 81921 Edge      ens50-Tx-Rx-0
  45:          0          0          0   ITS-MSI 81925 Edge
  38:          0       3171          0  PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0
  39:          0          0          0  IR-PCI-MSI 1048576-edge
 NMI:          0          0          0   Non-maskable interrupts
 ERR:          0
`
	lines, err := ParseInterrupts(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range lines {
		got = append(got, fmt.Sprintf("%d=%s", l.IRQ, l.Name))
	}
	if want := "11=arch_timer 41=ens50-Tx-Rx-0 45= 38=virtio2-input.0 39="; strings.Join(got, " ") != want {
		t.Errorf("got %s\nwant %s", strings.Join(got, " "), want)
	}
	if _, err := ParseInterrupts(strings.NewReader("")); err == nil {
		t.Error("empty file accepted")
	}
}
