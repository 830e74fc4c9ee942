package engine

import (
	"testing"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/cluster"
)

// threeNodes is the map of a cluster formed by cluster.Form of 3 nodes.
func threeNodes() *cluster.Map {
	m := &cluster.Map{Nodes: []cluster.Node{{Addr: "a:1"}, {Addr: "b:2"}, {Addr: "c:3"}}}
	for i, r := range cluster.Ranges(3) {
		for s := r[0]; s <= r[1]; s++ {
			m.Owner[s] = int16(i)
		}
	}
	return m
}

// Every key's name hashes to a slot of the node it was dealt to, the
// nodes get even shares of the keyspace, and the names stay --key-size
// long.
func TestClusterKeysDealtEvenly(t *testing.T) {
	rt := newRoute(threeNodes())
	const keys, keySize = 30001, 16
	var per [3]int
	var buf []byte
	for k := uint32(0); k < keys; k++ {
		slot := rt.slotOf(k)
		buf = appendKeyName(buf[:0], k, keySize, slot)
		if len(buf) != keySize {
			t.Fatalf("key %d: name %q is %d bytes", k, buf, len(buf))
		}
		if got := cluster.Slot(buf); got != slot || int(rt.m.Owner[got]) != rt.nodeOf(k) {
			t.Fatalf("key %d: %q hashes to slot %d (owner %d), dealt to node %d slot %d", k, buf, got, rt.m.Owner[got], rt.nodeOf(k), slot)
		}
		per[rt.nodeOf(k)]++
	}
	for i, n := range per {
		if n < keys/3 || n > keys/3+1 {
			t.Errorf("node %d has %d of %d keys", i, n, keys)
		}
	}
}

// A connection's chooser draws only its node's keys, and the prefill of a
// node's connections writes each of the node's keys once.
func TestClusterChooser(t *testing.T) {
	rt := newRoute(threeNodes())
	w := lab.Workload{Keyspace: 100, Connections: 7, Ratio: lab.Ratio{Gets: 1, Sets: 1}, Seed: 3}.Resolve()
	written := map[uint32]int{}
	for i := 0; i < w.Connections; i++ {
		ch := rt.clusterChooser(&w, i, w.Connections)
		for j := 0; j < 200; j++ {
			_, k := ch.next(false)
			if k >= uint32(w.Keyspace) || rt.nodeOf(k) != i%3 {
				t.Fatalf("connection %d drew key %d (node %d)", i, k, rt.nodeOf(k))
			}
		}
		ch.startPrefill()
		for !ch.prefilled() {
			_, k := ch.next(true)
			if rt.nodeOf(k) != i%3 {
				t.Fatalf("connection %d prefills key %d of node %d", i, k, rt.nodeOf(k))
			}
			written[k]++
		}
	}
	for k := uint32(0); k < uint32(w.Keyspace); k++ {
		if written[k] != 1 {
			t.Errorf("key %d prefilled %d times", k, written[k])
		}
	}
}

func TestParseRedirect(t *testing.T) {
	for _, tc := range []struct {
		line       string
		kind, slot int
		addr       string
		ok         bool
	}{
		{"MOVED 3999 127.0.0.1:6381", redirMoved, 3999, "127.0.0.1:6381", true},
		{"ASK 12 10.0.0.2:7000", redirAsk, 12, "10.0.0.2:7000", true},
		{"MOVED 5 :7001", redirMoved, 5, "198.18.0.1:7001", true},
		{"MOVED 16384 a:1", 0, 0, "", false},
		{"ERR wrong type", 0, 0, "", false},
		{"ASK x a:1", 0, 0, "", false},
	} {
		kind, slot, addr, ok := parseRedirect([]byte(tc.line), "198.18.0.1:7000")
		if ok != tc.ok || (ok && (kind != tc.kind || slot != tc.slot || addr != tc.addr)) {
			t.Errorf("%q: %d %d %q %v", tc.line, kind, slot, addr, ok)
		}
	}
}

// Naming a key in its slot allocates nothing: it is on the hot path.
func TestClusterKeyNameAllocs(t *testing.T) {
	rt := newRoute(threeNodes())
	buf := make([]byte, 0, 128)
	if n := testing.AllocsPerRun(100, func() { buf = appendSetHeaderIn(buf[:0], 12345, 16, rt.slotOf(12345), 1<<20) }); n != 0 {
		t.Errorf("appendSetHeaderIn allocates %v times", n)
	}
}
