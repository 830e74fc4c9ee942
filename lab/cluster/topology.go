package cluster

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/linerate/linerate/lab/resp"
)

// MaxNodes bounds a cluster's primaries (the campaign's server.cluster and
// what a slot map read from a server may hold).
const MaxNodes = 64

// Node is one primary of a cluster.
type Node struct {
	ID   string `json:"id,omitempty"`
	Addr string `json:"addr"` // host:port its clients reach
}

// Map is a cluster's slot map: its primaries and which one serves each
// slot (an index into Nodes; -1 when no node does).
type Map struct {
	Nodes []Node
	Owner [Slots]int16
}

// SlotsOf is the slots node i serves, in order.
func (m *Map) SlotsOf(i int) []int {
	var out []int
	for s, o := range m.Owner {
		if int(o) == i {
			out = append(out, s)
		}
	}
	return out
}

// NodeOf is the index of the node at addr; -1 when none is.
func (m *Map) NodeOf(addr string) int {
	for i, n := range m.Nodes {
		if n.Addr == addr {
			return i
		}
	}
	return -1
}

// ReadMap reads the slot map from one node (CLUSTER SLOTS). A node that
// announces no host is reached at the host c was dialled at. Every slot
// must be served: a run against a cluster with holes would fail requests
// rather than measure them.
func ReadMap(ctx context.Context, c *resp.Conn) (*Map, error) {
	v, err := c.Do(ctx, "CLUSTER", "SLOTS")
	if err != nil {
		return nil, err
	}
	seedHost, _, _ := net.SplitHostPort(c.Addr)
	m := &Map{}
	for i := range m.Owner {
		m.Owner[i] = -1
	}
	bad := func(msg string, a ...any) error {
		return fmt.Errorf("CLUSTER SLOTS on %s: %w: %s", c.Addr, resp.ErrMalformed, fmt.Sprintf(msg, a...))
	}
	for _, e := range v.Elems {
		if len(e.Elems) < 3 || len(e.Elems[2].Elems) < 2 {
			return nil, bad("a range with no primary")
		}
		lo, hi := e.Elems[0].Int, e.Elems[1].Int
		if lo < 0 || hi >= Slots || lo > hi {
			return nil, bad("range %d-%d", lo, hi)
		}
		p := e.Elems[2].Elems
		host, port := p[0].Str, p[1].Int
		if host == "" || host == "?" {
			host = seedHost
		}
		if port <= 0 || port > 65535 {
			return nil, bad("port %d", port)
		}
		n := Node{Addr: net.JoinHostPort(host, strconv.FormatInt(port, 10))}
		if len(p) > 2 {
			n.ID = p[2].Str
		}
		idx := m.NodeOf(n.Addr)
		if idx < 0 {
			if len(m.Nodes) == MaxNodes {
				return nil, bad("more than %d primaries", MaxNodes)
			}
			m.Nodes = append(m.Nodes, n)
			idx = len(m.Nodes) - 1
		}
		for s := lo; s <= hi; s++ {
			m.Owner[s] = int16(idx)
		}
	}
	for s, o := range m.Owner {
		if o < 0 {
			return nil, fmt.Errorf("cluster of %s: slot %d is served by no node", c.Addr, s)
		}
	}
	return m, nil
}

// Form makes one cluster of empty cluster-enabled servers, nodes[i]
// serving Ranges(len(nodes))[i]: each gets its own config epoch and its
// slots (CLUSTER ADDSLOTSRANGE), every other node meets the first (at its
// cluster-port when one is set), and
// Form returns once every node reports cluster_state:ok and knows them
// all, or fails when ctx ends first.
func Form(ctx context.Context, nodes []*resp.Conn) error {
	if len(nodes) == 0 || len(nodes) > MaxNodes {
		return fmt.Errorf("form a cluster of %d nodes: 1-%d", len(nodes), MaxNodes)
	}
	ranges := Ranges(len(nodes))
	for i, c := range nodes {
		if _, err := c.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", strconv.Itoa(i+1)); err != nil {
			return fmt.Errorf("form cluster: %w", err)
		}
		if _, err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(ranges[i][0]), strconv.Itoa(ranges[i][1])); err != nil {
			return fmt.Errorf("form cluster: %w", err)
		}
	}
	host, port, err := net.SplitHostPort(nodes[0].Addr)
	if err != nil {
		return fmt.Errorf("form cluster: first node %q: %w", nodes[0].Addr, err)
	}
	meet := []string{"CLUSTER", "MEET", host, port}
	// A bus port other than port+10000 (cluster-port set) must be named.
	cfg, err := nodes[0].Pairs(ctx, "CONFIG", "GET", "cluster-port")
	if err != nil {
		return fmt.Errorf("form cluster: %w", err)
	}
	if bus := cfg["cluster-port"]; bus != "" && bus != "0" {
		meet = append(meet, bus)
	}
	for _, c := range nodes[1:] {
		if _, err := c.Do(ctx, meet...); err != nil {
			return fmt.Errorf("form cluster: %w", err)
		}
	}
	return WaitOK(ctx, nodes)
}

// WaitOK polls CLUSTER INFO on every node until each says
// cluster_state:ok and knows len(nodes) nodes, or ctx ends.
func WaitOK(ctx context.Context, nodes []*resp.Conn) error {
	want := strconv.Itoa(len(nodes))
	for {
		var notYet error
		for _, c := range nodes {
			s, err := c.Text(ctx, "CLUSTER", "INFO")
			if err != nil {
				return fmt.Errorf("wait for cluster: %w", err)
			}
			info := resp.ParseInfo(s)
			if info["cluster_state"] != "ok" || info["cluster_known_nodes"] != want {
				notYet = fmt.Errorf("%s: cluster_state:%s, %s of %s nodes known", c.Addr, info["cluster_state"], info["cluster_known_nodes"], want)
				break
			}
		}
		if notYet == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for cluster_state:ok: %w (%v)", ctx.Err(), notYet)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// MoveSlot moves slot from src to dst as a resharding does: dst IMPORTING,
// src MIGRATING, hold (clients asking src for keys it no longer has get
// ASK meanwhile), the slot's keys MIGRATEd a batch at a time, then
// SETSLOT NODE on both (after which src answers MOVED). Bounded by the
// slot's key count at the start plus what clients add while it runs
// (at most maxBatches batches).
func MoveSlot(ctx context.Context, slot int, src, dst *resp.Conn, hold time.Duration) error {
	srcID, err := src.Text(ctx, "CLUSTER", "MYID")
	if err != nil {
		return fmt.Errorf("move slot %d: %w", slot, err)
	}
	dstID, err := dst.Text(ctx, "CLUSTER", "MYID")
	if err != nil {
		return fmt.Errorf("move slot %d: %w", slot, err)
	}
	s := strconv.Itoa(slot)
	if _, err := dst.Do(ctx, "CLUSTER", "SETSLOT", s, "IMPORTING", srcID); err != nil {
		return fmt.Errorf("move slot %d: %w", slot, err)
	}
	if _, err := src.Do(ctx, "CLUSTER", "SETSLOT", s, "MIGRATING", dstID); err != nil {
		return fmt.Errorf("move slot %d: %w", slot, err)
	}
	select {
	case <-ctx.Done():
		return fmt.Errorf("move slot %d: %w", slot, ctx.Err())
	case <-time.After(hold):
	}
	host, port, err := net.SplitHostPort(dst.Addr)
	if err != nil {
		return fmt.Errorf("move slot %d: %w", slot, err)
	}
	const batch, maxBatches = 16, 100_000
	for i := 0; ; i++ {
		if i == maxBatches {
			return fmt.Errorf("move slot %d: keys still arriving after %d batches", slot, maxBatches)
		}
		v, err := src.Do(ctx, "CLUSTER", "GETKEYSINSLOT", s, strconv.Itoa(batch))
		if err != nil {
			return fmt.Errorf("move slot %d: %w", slot, err)
		}
		if len(v.Elems) == 0 {
			break
		}
		args := []string{"MIGRATE", host, port, "", "0", "10000", "KEYS"}
		for _, k := range v.Elems {
			args = append(args, k.Str)
		}
		if _, err := src.Do(ctx, args...); err != nil {
			return fmt.Errorf("move slot %d: %w", slot, err)
		}
	}
	for _, c := range []*resp.Conn{dst, src} {
		if _, err := c.Do(ctx, "CLUSTER", "SETSLOT", s, "NODE", dstID); err != nil {
			return fmt.Errorf("move slot %d: %w", slot, err)
		}
	}
	return nil
}
