package lab

// ClusterRun is what a run against a cluster (bench --cluster) saw of it:
// every primary as the slot map named it at the start, with the share of
// the keyspace and of the connections the engine dealt it, and the
// redirects of the whole run (every phase; ops.<OP>.redirects has the
// measured window's).
type ClusterRun struct {
	Nodes []ClusterNode `json:"nodes"`
	Moved uint64        `json:"moved"` // MOVED replies followed
	Ask   uint64        `json:"ask"`   // ASK replies followed (ASKING, then the request)
}

// ClusterNode is one primary of a cluster run.
type ClusterNode struct {
	Addr        string `json:"addr"`
	Slots       int    `json:"slots"`       // slots it served at the start
	Keys        int    `json:"keys"`        // keys of the keyspace dealt to it
	Connections int    `json:"connections"` // connections to it
}

// Redirects counts a cluster's redirects of one operation's requests that
// completed in the measured window; each was sent again at the node named.
type Redirects struct {
	Moved uint64 `json:"moved"`
	Ask   uint64 `json:"ask"`
}

// add is r plus o (either may be nil: not a cluster run).
func (r *Redirects) add(o *Redirects) *Redirects {
	if o == nil {
		return r
	}
	if r == nil {
		r = &Redirects{}
	}
	r.Moved += o.Moved
	r.Ask += o.Ask
	return r
}

// mergeCluster is the cluster part of several clients' records against
// one cluster: the first's nodes with every client's connections to each,
// and the redirects of all. Each client dealt the same keyspace, so a
// node's keys stay as one client counted them.
func mergeCluster(parts []Part) *ClusterRun {
	var out *ClusterRun
	for _, p := range parts {
		c := p.Result.Cluster
		if c == nil {
			continue
		}
		if out == nil {
			out = &ClusterRun{Nodes: append([]ClusterNode(nil), c.Nodes...)}
			for i := range out.Nodes {
				out.Nodes[i].Connections = 0
			}
		}
		for _, n := range c.Nodes {
			for i := range out.Nodes {
				if out.Nodes[i].Addr == n.Addr {
					out.Nodes[i].Connections += n.Connections
				}
			}
		}
		out.Moved += c.Moved
		out.Ask += c.Ask
	}
	return out
}
