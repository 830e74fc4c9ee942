package engine

import (
	"context"
	"fmt"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/cluster"
	"github.com/linerate/linerate/lab/fields"
	"github.com/linerate/linerate/lab/resp"
)

// Cluster routing of the raw engine (bench --cluster). The slot map is
// read once from the seed before any connection opens (CLUSTER SLOTS).
// Connection i belongs to node i mod N and only ever asks it for keys:
// the keyspace is dealt out so that key k is node k mod N's, and its name
// carries a hash tag ({tag}key:…, cluster.Tag) of one of that node's
// slots, the node's slots taken in turn. Every node thus holds an even
// share of the keys (±1) and of the connections, and a request needs no
// routing decision on the hot path. When a slot moves mid-run, the old
// node answers MOVED (or ASK while the slot migrates): the request is
// sent again at the named node on the worker's side connection to it
// (redirect.go, ASKING first for ASK), counted, and after a MOVED the
// worker's own slot table says the slot went, so its connections to the
// old node draw another key instead of asking it again.
type route struct {
	m         *cluster.Map
	nodeSlots [][]int // each node's slots at the start, in order
}

// newRoute deals the keyspace over m's nodes.
func newRoute(m *cluster.Map) *route {
	r := &route{m: m, nodeSlots: make([][]int, len(m.Nodes))}
	for i := range m.Nodes {
		r.nodeSlots[i] = m.SlotsOf(i)
	}
	return r
}

// nodes is the number of primaries.
func (r *route) nodes() int { return len(r.nodeSlots) }

// nodeOf is the node key was dealt to.
func (r *route) nodeOf(key uint32) int { return int(key % uint32(len(r.nodeSlots))) }

// slotOf is the slot key's name hashes to.
func (r *route) slotOf(key uint32) int {
	n := uint32(len(r.nodeSlots))
	s := r.nodeSlots[key%n]
	return s[int(key/n)%len(s)]
}

// appendKeyName appends key's name: lab.AppendKey's, or in a cluster
// (slot >= 0) the slot's hash tag in braces followed by lab.AppendKey's
// name shortened to keep the key keySize bytes long.
func appendKeyName(dst []byte, key uint32, keySize, slot int) []byte {
	if slot < 0 {
		return lab.AppendKey(dst, key, keySize)
	}
	tag := cluster.Tag(slot)
	dst = append(dst, '{')
	dst = append(dst, tag...)
	dst = append(dst, '}')
	return lab.AppendKey(dst, key, keySize-len(tag)-2)
}

// clusterChooser is connection i's chooser of c connections: GETs and
// SETs of the keys of node i mod N only. Its sampler runs over the
// node's share of the keyspace (local index x is key node + N·x), so the
// distribution keeps its shape within each node, and the prefill gives
// each of the node's connections a contiguous part of that share.
func (r *route) clusterChooser(w *lab.Workload, i, c int) chooser {
	n := r.nodes()
	node := i % n
	local := *w
	local.Keyspace = (w.Keyspace - node + n - 1) / n
	ch := newChooser(&local, i/n, (c-node+n-1)/n)
	ch.rng.Seed(int64(w.Seed)*1_000_003 + int64(i)) // apart from the other nodes' connections
	ch.off, ch.stride = uint32(node), uint32(n)
	return ch
}

// check refuses a workload the cluster cannot be dealt out to evenly.
func (r *route) check(w lab.Workload) error {
	n := r.nodes()
	switch {
	case w.Connections < n:
		return &fields.FieldError{Field: "-c/--connections", Msg: fmt.Sprintf("%d connections for a cluster of %d primaries: every primary needs one; use -c %d or more", w.Connections, n, n)}
	case w.Keyspace < n:
		return &fields.FieldError{Field: "-n/--keyspace", Msg: fmt.Sprintf("%d keys for a cluster of %d primaries: every primary needs one; use -n %d or more", w.Keyspace, n, n)}
	}
	return nil
}

// readRoute reads the slot map from the seed (the workload's address).
func readRoute(ctx context.Context, w lab.Workload) (*route, error) {
	c, err := resp.Dial(ctx, w.Addr(), resp.Options{User: w.User, Password: w.Password})
	if err != nil {
		return nil, fmt.Errorf("cluster slot map: %w", err)
	}
	defer c.Close()
	m, err := cluster.ReadMap(ctx, c)
	if err != nil {
		return nil, err
	}
	r := newRoute(m)
	return r, r.check(w)
}

// dbSize is the keys of every primary together.
func (r *route) dbSize(ctx context.Context, w lab.Workload) (int64, error) {
	var sum int64
	for _, nd := range r.m.Nodes {
		c, err := resp.Dial(ctx, nd.Addr, resp.Options{User: w.User, Password: w.Password})
		if err != nil {
			return 0, fmt.Errorf("cluster DBSIZE: %w", err)
		}
		n, err := c.Integer(ctx, "DBSIZE")
		c.Close()
		if err != nil {
			return 0, err
		}
		sum += n
	}
	return sum, nil
}

// clusterRecord says what the run saw of the cluster: each primary's
// address, slots at the start, keys dealt to it and connections, and the
// redirects of every phase.
func (e *engine) clusterRecord() *lab.ClusterRun {
	r := e.route
	n := r.nodes()
	out := &lab.ClusterRun{}
	for i, nd := range r.m.Nodes {
		out.Nodes = append(out.Nodes, lab.ClusterNode{
			Addr:        nd.Addr,
			Slots:       len(r.nodeSlots[i]),
			Keys:        (e.w.Keyspace - i + n - 1) / n,
			Connections: (e.w.Connections - i + n - 1) / n,
		})
	}
	for _, wk := range e.workers {
		for p := range wk.redir {
			for op := range wk.redir[p] {
				out.Moved += wk.redir[p][op][redirMoved]
				out.Ask += wk.redir[p][op][redirAsk]
			}
		}
	}
	return out
}
