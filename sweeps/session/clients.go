package session

import (
	"strconv"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/netns"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/agent"
	"github.com/linerate/linerate/sweeps/calibrate"
	"github.com/linerate/linerate/sweeps/hostbench"
)

// A pair's client hosts: one runs the load, or several together
// (clients: N); the hosts' data interfaces, read for their driver
// counters each cell; and the link between them, calibrated before the
// first cell.

// clientRole names client host i (0-based): client, client-2 ….
func clientRole(i int) string {
	if i == 0 {
		return "client"
	}
	return "client-" + strconv.Itoa(i+1)
}

// clientBencher is the cells' bencher: `linerate bench` on the client
// host, or on every client host at once, started together (offsets are
// their clocks against this machine's; nil: one clock).
func clientBencher(pair infra.Pair, offsets []time.Duration, live func(*lab.Live)) sweeps.Bencher {
	hosts := pair.ClientHosts()
	if len(hosts) == 1 {
		return hostbench.HostBencher{Host: hosts[0], Live: live}
	}
	b := hostbench.HostsBencher{Hosts: hosts, Offsets: offsets, Live: live}
	if offsets == nil {
		// One clock is one machine: every host's bench is a process
		// started here, running within milliseconds; a second is ample
		// where remote hosts get the default 3 s.
		b.Lead = time.Second
	}
	return b
}

// netnsNICs reads the pair's veth ends from this process, inside each
// namespace: every server end (one per client link) and each client's.
// close closes their sockets.
func netnsNICs(srv infra.Entered, pair infra.Pair) (nics []sweeps.NICSource, closeAll func()) {
	var mine []*sweeps.NIC
	for _, dev := range netns.ServerDevices(len(pair.ClientHosts())) {
		mine = append(mine, &sweeps.NIC{Host: "server", Do: srv.Do, Name: dev})
	}
	for i, h := range pair.ClientHosts() {
		nh, ok := h.(infra.Entered)
		if !ok {
			continue
		}
		mine = append(mine, &sweeps.NIC{Host: clientRole(i), Do: nh.Do, Addr: nh.DataAddr()})
	}
	for _, n := range mine {
		nics = append(nics, n)
	}
	return nics, func() {
		for _, n := range mine {
			n.Close()
		}
	}
}

// agentNICs reads each host's interface on its data address through its
// agent.
func agentNICs(agents map[string]*agent.AgentClient) []sweeps.NICSource {
	var nics []sweeps.NICSource
	for _, role := range agent.Roles(agents) {
		a := agents[role]
		if a.Host.DataAddr().IsValid() {
			nics = append(nics, a.NICSource(role, a.Host.DataAddr()))
		}
	}
	return nics
}

// linkPair is what the link between pair's hosts is calibrated on: a
// sink on the server host, the bench from the first client host alone
// and from all of them as the cells run.
func linkPair(pair infra.Pair, offsets []time.Duration, nics []sweeps.NICSource) *calibrate.Pair {
	return &calibrate.Pair{Server: pair.Server, One: hostbench.HostBencher{Host: pair.Client}, All: clientBencher(pair, offsets, nil),
		Clients: len(pair.ClientHosts()), NICs: nics}
}
