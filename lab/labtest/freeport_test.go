package labtest

import (
	"net"
	"strconv"
	"testing"
)

// FreePort draws below the kernel's ephemeral range, so no listen on port
// 0 or outgoing connection elsewhere can take the port before its server
// binds it; and the port is one a listener can bind.
func TestFreePortIsOutsideTheEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	if low <= freePortFloor+1000 {
		t.Fatalf("ephemeral range starts at %d: no room below it on this machine (Debian's starts at 32768)", low)
	}
	for range 50 {
		p := FreePort(t)
		if p < freePortFloor || p >= low {
			t.Fatalf("port %d, want one in [%d, %d)", p, freePortFloor, low)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d: %v", p, err)
		}
		l.Close()
	}
}
