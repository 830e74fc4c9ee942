package engine

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/fields"
	"github.com/linerate/linerate/lab/keys"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/lab/pace"
)

// recordingPeer answers GET with a good value and SET with +OK, and keeps
// every GET and SET it was sent, as "GET 17", in order per connection.
// The connections' sequences come sorted, so two clients that send the
// same sequences over their connections give the same list.
func recordingPeer(t *testing.T, layout *lab.ValueLayout) (*labtest.Peer, func() [][]string) {
	var mu sync.Mutex
	seen := map[io.Writer][]string{}
	p := labtest.StartPeer(t, func(_ int, args [][]byte, w io.Writer) error {
		op := string(args[0])
		if op != "GET" && op != "SET" {
			_, err := io.WriteString(w, "+OK\r\n")
			return err
		}
		id, _ := lab.ParseKeyID(args[1])
		mu.Lock()
		seen[w] = append(seen[w], fmt.Sprintf("%s %d", op, id))
		mu.Unlock()
		out := []byte("+OK\r\n")
		if op == "GET" {
			out = goodValue(id, layout)
		}
		_, err := w.Write(out)
		return err
	})
	return p, func() [][]string {
		mu.Lock()
		defer mu.Unlock()
		var out [][]string
		for _, s := range seen {
			out = append(out, append([]string(nil), s...))
		}
		sort.Slice(out, func(i, j int) bool {
			return fmt.Sprint(out[i][:min(len(out[i]), 20)]) < fmt.Sprint(out[j][:min(len(out[j]), 20)])
		})
		return out
	}
}

// Both engines draw ops and keys with the same chooser: given the same
// seed, connections with one request in flight each send the same
// sequence whichever engine drives them, prefill included.
func TestEnginesDrawTheSameSequence(t *testing.T) {
	t.Parallel()
	layout := lab.NewValueLayout(4096, 5)
	for _, tc := range []struct {
		name     string
		ratio    lab.Ratio
		dist     keys.Dist
		prefill  bool
		conns    int
		keyspace int
	}{
		{"uniform mix", lab.Ratio{Gets: 70, Sets: 30}, keys.Dist{Kind: keys.Uniform}, false, 1, 40},
		{"zipf", lab.Ratio{Gets: 50, Sets: 50}, keys.Dist{Kind: keys.Zipf, Alpha: 1.2}, false, 1, 40},
		{"sequential SET", lab.Ratio{Sets: 1}, keys.Dist{Kind: keys.Sequential}, false, 1, 40},
		{"sequential GET after prefill", lab.Ratio{Gets: 1}, keys.Dist{Kind: keys.Sequential}, true, 1, 40},
		{"two connections, uniform", lab.Ratio{Gets: 60, Sets: 40}, keys.Dist{Kind: keys.Uniform}, false, 2, 41},
		// Prefill shares (21 + 20 keys) differ from sequential starts (0, 20).
		{"two connections, sequential after prefill", lab.Ratio{Gets: 1}, keys.Dist{Kind: keys.Sequential}, true, 2, 41},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seqs [2][][]string
			for i, name := range []string{lab.EngineRaw, lab.EngineValkeyGo} {
				p, seen := recordingPeer(t, layout)
				w := lab.Workload{Host: "127.0.0.1", Port: p.Port, Connections: tc.conns, Pipeline: 1, Threads: 1,
					Keyspace: tc.keyspace, ValueSz: lab.OneSize(lab.Size(layout.Size)), Seed: layout.Seed, Ratio: tc.ratio, KeyDist: tc.dist,
					Prefill: tc.prefill, Duration: lab.Duration(time.Minute), RequestTimeout: lab.Duration(labtest.RequestTimeout),
					Engine: name}.Resolve()
				if err := fields.Validate(w); err != nil {
					t.Fatal(err)
				}
				e, err := openEngine(w, nil)
				if err != nil {
					t.Fatal(err)
				}
				if tc.prefill {
					if err := e.prefill(context.Background(), nil); err != nil {
						t.Fatalf("%s: %v", name, err)
					}
				}
				// Each unit stops after 60 requests (a pacer), however
				// fast the machine: the run ends when all have.
				e.pacers = func(int) pace.Pacer { return &scripted{limit: 60} }
				e.measure(context.Background(), nil, nil)
				e.shutdown()
				seqs[i] = seen()
			}
			if len(seqs[0]) != tc.conns || len(seqs[1]) != tc.conns {
				t.Fatalf("want %d connections sending, raw used %d, valkey-go %d", tc.conns, len(seqs[0]), len(seqs[1]))
			}
			for c := range seqs[0] {
				raw, vk := seqs[0][c], seqs[1][c]
				n := min(len(raw), len(vk))
				if n < 60 {
					t.Fatalf("too few requests to compare: raw %d, valkey-go %d", len(raw), len(vk))
				}
				for i := 0; i < n; i++ {
					if raw[i] != vk[i] {
						t.Fatalf("connection %d, request %d: raw sent %q, valkey-go %q (raw %v, valkey-go %v)",
							c, i, raw[i], vk[i], raw[max(i-3, 0):i+1], vk[max(i-3, 0):i+1])
					}
				}
			}
		})
	}
}

func TestChooser(t *testing.T) {
	base := lab.Workload{Keyspace: 10, Seed: 3, Ratio: lab.Ratio{Gets: 1}, KeyDist: keys.Dist{Kind: keys.Uniform}}
	draw := func(c *chooser, n int, prefill bool) (ops [2]int, keys []uint32) {
		for i := 0; i < n; i++ {
			op, key := c.next(prefill)
			ops[op]++
			keys = append(keys, key)
		}
		return ops, keys
	}
	for _, tc := range []struct {
		name    string
		ratio   lab.Ratio
		dist    keys.Dist
		index   int
		prefill bool
		sets    int      // of 1000 draws: exactly, or -1 for "some but not all"
		first   []uint32 // the first keys, when they are known
	}{
		{"GET only", lab.Ratio{Gets: 1}, keys.Dist{Kind: keys.Uniform}, 0, false, 0, nil},
		{"SET only", lab.Ratio{Sets: 1}, keys.Dist{Kind: keys.Uniform}, 0, false, 1000, nil},
		{"mix", lab.Ratio{Gets: 9, Sets: 1}, keys.Dist{Kind: keys.Uniform}, 0, false, -1, nil},
		{"sequential from the unit's start", lab.Ratio{Gets: 1}, keys.Dist{Kind: keys.Sequential}, 2, false, 0, []uint32{6, 7, 8, 9, 0, 1}},
		{"prefill is SETs of the unit's share", lab.Ratio{Gets: 1}, keys.Dist{Kind: keys.Zipf, Alpha: 1.5}, 2, true, 1000, []uint32{8, 9}},
	} {
		w := base
		w.Ratio, w.KeyDist = tc.ratio, tc.dist
		c := newChooser(&w, tc.index, 3) // shares of 10 keys: [0,4) [4,8) [8,10); starts 0, 3, 6
		if tc.prefill {
			c.startPrefill()
		}
		ops, keys := draw(&c, 1000, tc.prefill)
		switch {
		case tc.sets >= 0 && ops[opSet] != tc.sets:
			t.Errorf("%s: %d SETs of 1000, want %d", tc.name, ops[opSet], tc.sets)
		case tc.sets < 0 && (ops[opSet] == 0 || ops[opGet] == 0):
			t.Errorf("%s: %d GETs and %d SETs: want both", tc.name, ops[opGet], ops[opSet])
		}
		for i, k := range tc.first {
			if keys[i] != k {
				t.Errorf("%s: keys start %v, want %v", tc.name, keys[:len(tc.first)], tc.first)
				break
			}
		}
		for _, k := range keys {
			if k >= uint32(w.Keyspace) {
				t.Fatalf("%s: key %d outside a keyspace of %d", tc.name, k, w.Keyspace)
			}
		}
	}
	// The units' prefill shares cover the keyspace once, and each unit
	// says when its share is written; sequential access then starts at
	// the unit's own start, not where its prefill share ended.
	w := base
	w.KeyDist = keys.Dist{Kind: keys.Sequential}
	written := map[uint32]int{}
	for i := 0; i < 3; i++ {
		c := newChooser(&w, i, 3)
		c.startPrefill()
		for n := 0; !c.prefilled(); n++ {
			if n > w.Keyspace {
				t.Fatalf("unit %d: its prefill never ends", i)
			}
			_, key := c.next(true)
			written[key]++
		}
		c.endPrefill()
		if _, k := c.next(false); k != uint32(i*3) {
			t.Errorf("unit %d: sequential access after the prefill starts at key %d, not the unit's start %d", i, k, i*3)
		}
	}
	for k := uint32(0); k < uint32(w.Keyspace); k++ {
		if written[k] != 1 {
			t.Errorf("prefill wrote key %d %d times", k, written[k])
		}
	}
}

// Choosing is on every request's path: it allocates nothing.
func TestChooserAllocatesNothing(t *testing.T) {
	for _, dist := range []keys.Dist{{Kind: keys.Uniform}, {Kind: keys.Sequential}, {Kind: keys.Zipf, Alpha: 1.1}, {Kind: keys.Zipf, Alpha: 0.9}, {Kind: keys.Gaussian, Mean: 0.5, SD: 0.1}} {
		w := lab.Workload{Keyspace: 1000, Seed: 1, Ratio: lab.Ratio{Gets: 3, Sets: 1}, KeyDist: dist}
		c := newChooser(&w, 1, 4)
		if n := testing.AllocsPerRun(1000, func() { c.next(false) }); n != 0 {
			t.Errorf("%s: %.1f allocations per draw", dist, n)
		}
	}
}
