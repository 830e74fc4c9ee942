package launch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/lab/cluster"
	"github.com/linerate/linerate/lab/cpus"
	"github.com/linerate/linerate/lab/resp"
)

// Cluster starts N server processes with one launcher and makes them one
// Valkey/Redis Cluster (campaign server.cluster: N): each node is started
// cluster-enabled with its own config file beside its log, pinned to its
// own part of the settings' CPUs, and lab/cluster.Form assigns the slots
// (CLUSTER ADDSLOTSRANGE, node i serving cluster.Ranges(N)[i]) and joins
// the nodes (CLUSTER MEET); Start returns once every node reports
// cluster_state:ok. No external tool (valkey-cli --cluster) is used. The
// returned server is the first node's address and facts; Stop stops every
// node, and any node ending on its own is the cluster's Exit.
type Cluster struct {
	Launcher infra.Launcher
	N        int
	// Dial reaches the nodes for forming; nil: a local launcher's network
	// place (its namespace's Dial), else this host's network.
	Dial resp.Dialer
}

// FormTimeout bounds the wait for cluster_state:ok after the slots are
// assigned and the nodes met (the start timeout when longer).
const FormTimeout = 30 * time.Second

// Start implements infra.Launcher.
func (c *Cluster) Start(ctx context.Context, s infra.ServerSettings) (infra.Server, error) {
	if c.N < 1 || c.N > cluster.MaxNodes {
		return nil, fmt.Errorf("server settings cluster: %d nodes; use 1-%d", c.N, cluster.MaxNodes)
	}
	if s.TLS {
		return nil, errors.New("server settings cluster: not with tls yet (the nodes' cluster bus and the bench's routing speak plain TCP)")
	}
	parts, err := splitCPUs(s.CPUs, c.N)
	if err != nil {
		return nil, err
	}
	cs := &clusterServer{exited: make(chan infra.Exit, c.N)}
	for i := 0; i < c.N; i++ {
		ns := s
		ns.Extra = append(append([]string(nil), s.Extra...), "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
		if err := c.ports(&ns, i); err != nil {
			cs.stopAll(ctx)
			return nil, fmt.Errorf("start cluster node %d of %d: %w", i+1, c.N, err)
		}
		if s.LogDir != "" {
			ns.LogDir = filepath.Join(s.LogDir, "node-"+strconv.Itoa(i))
		}
		if parts != nil {
			ns.CPUs = parts[i].String()
		}
		srv, err := c.Launcher.Start(ctx, ns)
		if err != nil {
			cs.stopAll(ctx)
			return nil, fmt.Errorf("start cluster node %d of %d: %w", i+1, c.N, err)
		}
		cs.nodes = append(cs.nodes, srv)
	}
	if err := c.form(ctx, s, cs.nodes); err != nil {
		cs.stopAll(ctx)
		return nil, err
	}
	cs.watch()
	return cs, nil
}

// ports gives node i its client port and its cluster bus port. The bus
// defaults to the client port + 10000, which a server refuses past 55535
// (and which may be taken): with a local launcher both are chosen free in
// its network place and the bus is named (--cluster-port). A fixed
// settings port P is node i's P+i.
func (c *Cluster) ports(ns *infra.ServerSettings, i int) error {
	if ns.Port != 0 {
		ns.Port += i
	}
	l, ok := c.Launcher.(*Local)
	if !ok {
		return nil
	}
	bind := ns.Bind
	if bind == "" {
		bind = "127.0.0.1"
	}
	held := make([]net.Listener, 0, 2)
	defer func() {
		for _, ln := range held {
			ln.Close()
		}
	}()
	free := func() (int, error) { // held open so the two differ
		ln, err := l.Net.listen("tcp", net.JoinHostPort(bind, "0"))
		if err != nil {
			return 0, fmt.Errorf("find a free port on %s: %w", bind, err)
		}
		held = append(held, ln)
		return ln.Addr().(*net.TCPAddr).Port, nil
	}
	if ns.Port == 0 {
		p, err := free()
		if err != nil {
			return err
		}
		ns.Port = p
	}
	bus, err := free()
	if err != nil {
		return err
	}
	ns.Extra = append(ns.Extra, "--cluster-port", strconv.Itoa(bus))
	return nil
}

// form joins the started nodes into one cluster.
func (c *Cluster) form(ctx context.Context, s infra.ServerSettings, nodes []infra.Server) error {
	limit := max(FormTimeout, s.StartTimeout)
	fctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	opt := resp.Options{Dial: c.Dial, Password: s.RequirePass}
	if l, ok := c.Launcher.(*Local); ok && opt.Dial == nil && l.Net != nil {
		opt.Dial = l.Net.Dial
	}
	if s.User != nil {
		opt.User, opt.Password = s.User.Name, s.User.Password
	}
	conns := make([]*resp.Conn, 0, len(nodes))
	defer func() {
		for _, cn := range conns {
			cn.Close()
		}
	}()
	for _, n := range nodes {
		cn, err := resp.Dial(fctx, n.Addr(), opt)
		if err != nil {
			return fmt.Errorf("form cluster: %w", err)
		}
		conns = append(conns, cn)
	}
	if err := cluster.Form(fctx, conns); err != nil {
		return fmt.Errorf("cluster of %d nodes (within %s): %w", len(nodes), limit, err)
	}
	return nil
}

// splitCPUs deals list (a CPU list string; "" is unpinned: nil) into n
// contiguous parts of sizes differing by at most one.
func splitCPUs(list string, n int) ([]cpus.List, error) {
	if list == "" {
		return nil, nil
	}
	l, err := cpus.Parse(list)
	if err != nil {
		return nil, fmt.Errorf("server settings cpus: %w", err)
	}
	if len(l) < n {
		return nil, fmt.Errorf("server settings cpus: %s is %d CPUs for a cluster of %d nodes; each node needs one of its own", list, len(l), n)
	}
	out := make([]cpus.List, n)
	lo := 0
	for i := range out {
		size := len(l) / n
		if i < len(l)%n {
			size++
		}
		out[i] = l[lo : lo+size]
		lo += size
	}
	return out, nil
}

// clusterServer is a started cluster as one infra.Server.
type clusterServer struct {
	nodes  []infra.Server
	exited chan infra.Exit
}

func (cs *clusterServer) Addr() string             { return cs.nodes[0].Addr() }
func (cs *clusterServer) Facts() infra.ServerFacts { return cs.nodes[0].Facts() }
func (cs *clusterServer) LogPath() string          { return cs.nodes[0].LogPath() }

// Nodes is every node, the seed (Addr) first.
func (cs *clusterServer) Nodes() []infra.Server { return cs.nodes }

// Nodes is the nodes of a server Cluster started, the seed first; a
// single server is its own only node.
func Nodes(srv infra.Server) []infra.Server {
	if cs, ok := srv.(*clusterServer); ok {
		return cs.Nodes()
	}
	return []infra.Server{srv}
}

// Exited yields the first node that ended on its own, named, and is closed
// once every node has ended.
func (cs *clusterServer) Exited() <-chan infra.Exit { return cs.exited }

func (cs *clusterServer) watch() {
	var wg sync.WaitGroup
	for i, n := range cs.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e := range n.Exited() {
				e.LogTail = fmt.Sprintf("cluster node %d (%s): %s", i+1, n.Addr(), e.LogTail)
				cs.exited <- e // buffered: one per node at most
			}
		}()
	}
	go func() { wg.Wait(); close(cs.exited) }()
}

// Stop stops every node, whatever the others do.
func (cs *clusterServer) Stop(ctx context.Context) error {
	return cs.stopAll(ctx)
}

func (cs *clusterServer) stopAll(ctx context.Context) error {
	var errs []error
	for _, n := range cs.nodes {
		if err := n.Stop(context.WithoutCancel(ctx)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
