package engine

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/keys"
)

// The keys of one request are distinct whatever the distribution, also
// when the request names every key of the keyspace or a hot zipf key
// would be drawn again and again; drawing them allocates nothing.
func TestMultiKeysAreDistinct(t *testing.T) {
	for _, tc := range []struct {
		dist     keys.Dist
		keyspace int
		n        int
	}{
		{keys.Dist{Kind: keys.Uniform}, 500, 10},
		{keys.Dist{Kind: keys.Uniform}, 10, 10},
		{keys.Dist{Kind: keys.Zipf, Alpha: 3}, 50, 20},
		{keys.Dist{Kind: keys.Sequential}, 7, 7},
		{keys.Dist{Kind: keys.Gaussian, Mean: 0.5, SD: 0.001}, 1000, 64},
	} {
		w := lab.Workload{Keyspace: tc.keyspace, Ratio: lab.Ratio{Gets: 1}, KeyDist: tc.dist, Seed: 5}
		c := newChooser(&w, 0, 1)
		ks := make([]uint32, tc.n)
		seen := make(map[uint32]bool, tc.n)
		for i := 0; i < 2000; i++ {
			_, ks[0] = c.next(false)
			c.moreKeys(ks)
			clear(seen)
			for _, k := range ks {
				if seen[k] || k >= uint32(tc.keyspace) {
					t.Fatalf("%v over %d keys: request %v repeats a key or leaves the keyspace", tc.dist, tc.keyspace, ks)
				}
				seen[k] = true
			}
		}
		if n := testing.AllocsPerRun(100, func() { _, ks[0] = c.next(false); c.moreKeys(ks) }); n != 0 {
			t.Errorf("%v: drawing a request's keys allocates %.0f times", tc.dist, n)
		}
	}
}

func TestMultiKeyEncoding(t *testing.T) {
	if got := string(appendMGet(nil, []uint32{7, 12}, 8)); got != "*3\r\n$4\r\nMGET\r\n$8\r\nkey:0007\r\n$8\r\nkey:0012\r\n" {
		t.Errorf("MGET = %q", got)
	}
	// An MSET's pieces, put together, are the command a server reads.
	w := lab.Workload{Keyspace: 16, KeySize: 8, Command: lab.CommandMSet, KeysPerOp: 2, ValueSz: lab.OneSize(64), Seed: 1}.Resolve()
	e := &engine{w: w, layout: lab.NewValueLayout(64, 1)}
	wk := &worker{w: &e.w, sched: &schedule{}}
	c := e.newConn(wk, 0, 0, 1, newChooser(&w, 0, 1))
	c.pattern = e.layout
	r := req{op: opSet, key: 7}
	c.issueMulti(&r, 0)
	var got []byte
	for _, v := range c.iov[c.iovLo:c.iovHi] {
		got = append(got, unsafeBytes(v)...)
	}
	k2 := c.slotKeys(0)[1]
	want := "*5\r\n$4\r\nMSET\r\n$8\r\n" + lab.KeyName(7, 8) + "\r\n$64\r\n" + string(e.layout.Full(7, 1)) + "\r\n" +
		"$8\r\n" + lab.KeyName(k2, 8) + "\r\n$64\r\n" + string(e.layout.Full(k2, 2)) + "\r\n"
	if string(got) != want || r.wireOut != uint64(len(want)) || r.size != 128 {
		t.Errorf("MSET of keys 7, %d = %q (%d wire bytes, %d payload)\nwant %q", k2, got, r.wireOut, r.size, want)
	}
}

// unsafeBytes is the memory an iovec points at.
func unsafeBytes(v unix.Iovec) []byte { return unsafe.Slice(v.Base, int(v.Len)) }
