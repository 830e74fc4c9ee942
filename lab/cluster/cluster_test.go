package cluster_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/infra/servers/serverstest"
	"github.com/linerate/linerate/lab/cluster"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/lab/resp"
)

func TestSlot(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want int
	}{
		// "123456789" is XMODEM's check string: CRC 0x31C3.
		{"123456789", 0x31C3 % cluster.Slots},
		{"foo", 12182},
		{"{user1000}.following", cluster.Slot([]byte("user1000"))},
		{"{user1000}.followers", cluster.Slot([]byte("user1000"))},
		{"foo{}{bar}", cluster.Slot([]byte("foo{}{bar}"))}, // empty tag: whole key
		{"foo{{bar}}zap", cluster.Slot([]byte("{bar"))},
		{"foo{bar}{zap}", cluster.Slot([]byte("bar"))},
	} {
		if got := cluster.Slot([]byte(tc.key)); got != tc.want {
			t.Errorf("Slot(%q) = %d, want %d", tc.key, got, tc.want)
		}
	}
	if got := cluster.CRC16([]byte("123456789")); got != 0x31C3 {
		t.Errorf("CRC16 check value = %#x, want 0x31c3", got)
	}
}

func TestTagsCoverEverySlot(t *testing.T) {
	for s := 0; s < cluster.Slots; s++ {
		tag := cluster.Tag(s)
		if tag == "" || len(tag) > cluster.MaxTagLen {
			t.Fatalf("slot %d: tag %q", s, tag)
		}
		if got := cluster.Slot([]byte("{" + tag + "}key:000123")); got != s {
			t.Fatalf("slot %d: tag %q lands in %d", s, tag, got)
		}
	}
}

func TestRanges(t *testing.T) {
	for _, n := range []int{1, 3, 7, cluster.MaxNodes} {
		r := cluster.Ranges(n)
		next := 0
		for i, x := range r {
			size := x[1] - x[0] + 1
			if x[0] != next || size < cluster.Slots/n || size > cluster.Slots/n+1 {
				t.Fatalf("n=%d: range %d is %v", n, i, x)
			}
			next = x[1] + 1
		}
		if next != cluster.Slots {
			t.Fatalf("n=%d: ranges end at %d", n, next)
		}
	}
}

// A real cluster of 3: formed by Form, read back by ReadMap, one slot
// moved with its keys by MoveSlot.
func TestFormReadMove(t *testing.T) {
	servers := labtest.StartCluster(t, serverstest.Valkey(t).Server, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conns := make([]*resp.Conn, len(servers))
	for i, s := range servers {
		c, err := resp.Dial(ctx, s.Addr, resp.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	m, err := cluster.ReadMap(ctx, conns[1])
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Nodes) != 3 {
		t.Fatalf("map has %d nodes: %+v", len(m.Nodes), m.Nodes)
	}
	for i, r := range cluster.Ranges(3) {
		idx := m.NodeOf(servers[i].Addr)
		if idx < 0 || int(m.Owner[r[0]]) != idx || int(m.Owner[r[1]]) != idx {
			t.Fatalf("node %s does not serve %v: %+v", servers[i].Addr, r, m.Nodes)
		}
	}
	// Keys of one slot on node 0, moved to node 2.
	slot := 42
	for i := 0; i < 5; i++ {
		key := fmt.Sprintf("{%s}k%d", cluster.Tag(slot), i)
		if _, err := conns[0].Do(ctx, "SET", key, strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := cluster.MoveSlot(ctx, slot, conns[0], conns[2], 0); err != nil {
		t.Fatal(err)
	}
	n, err := conns[2].Integer(ctx, "CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(slot))
	if err != nil || n != 5 {
		t.Fatalf("keys in slot %d on the new node: %d, %v", slot, n, err)
	}
	_, err = conns[0].Do(ctx, "GET", fmt.Sprintf("{%s}k0", cluster.Tag(slot)))
	if err == nil || !strings.Contains(err.Error(), "MOVED 42 "+servers[2].Addr) {
		t.Fatalf("GET on the old node: %v, want MOVED to %s", err, servers[2].Addr)
	}
}
