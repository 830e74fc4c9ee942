package agent

import (
	"context"
	"errors"
	"net/netip"
	"sync"

	"github.com/linerate/linerate/infra/nicstats"
	"github.com/linerate/linerate/sweeps"
)

// The agent reads its host's NIC driver counters for the coordinator, at
// the edges of each cell's window (op nic): the ioctl reaches only the
// interfaces of the namespace it runs in.

// nicAnswer is one read: which interface, and its watched counters.
type nicAnswer struct {
	Info     sweeps.NICInfo    `json:"info"`
	Counters nicstats.Counters `json:"counters"`
}

// agentNICs are the interfaces an agent has opened, by address or name.
type agentNICs struct {
	mu   sync.Mutex
	open map[string]*sweeps.NIC
}

func (n *agentNICs) get(role, addr, name string) (*sweeps.NIC, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	key := addr + "/" + name
	if nic := n.open[key]; nic != nil {
		return nic, nil
	}
	nic := &sweeps.NIC{Host: role, Name: name}
	if name == "" {
		a, err := netip.ParseAddr(addr)
		if err != nil {
			return nil, errors.New("nic: give the interface or the address it carries")
		}
		nic.Addr = a
	}
	if n.open == nil {
		n.open = map[string]*sweeps.NIC{}
	}
	n.open[key] = nic
	return nic, nil
}

func (n *agentNICs) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, nic := range n.open {
		nic.Close()
	}
	n.open = nil
}

func (a *Agent) nic(ctx context.Context, req nicRequest) (agentReply, error) {
	nic, err := a.nics.get(req.Role, req.DataAddr, req.Interface)
	if err != nil {
		return agentReply{}, err
	}
	info, err := nic.NIC(ctx)
	if err != nil {
		return agentReply{}, err
	}
	c, err := nic.Counters(ctx)
	if err != nil {
		return agentReply{}, err
	}
	return agentReply{NIC: &nicAnswer{Info: info, Counters: nicstats.KeepWatched(c)}}, nil
}

// NICSource is the interface of the agent's host that carries addr, read
// through the agent (sweeps.NICSource); role names the host.
func (c *AgentClient) NICSource(role string, addr netip.Addr) sweeps.NICSource {
	return &remoteNIC{c: c, role: role, addr: addr}
}

type remoteNIC struct {
	c    *AgentClient
	role string
	addr netip.Addr
}

func (r *remoteNIC) read(ctx context.Context) (*nicAnswer, error) {
	rep, _, err := r.c.call(ctx, nicRequest{Role: r.role, DataAddr: r.addr.String()}, nil)
	if err != nil {
		return nil, err
	}
	if rep.NIC == nil {
		return nil, errors.New("nic: empty answer")
	}
	return rep.NIC, nil
}

func (r *remoteNIC) NIC(ctx context.Context) (sweeps.NICInfo, error) {
	a, err := r.read(ctx)
	if err != nil {
		return sweeps.NICInfo{Host: r.role}, err
	}
	return a.Info, nil
}

func (r *remoteNIC) Counters(ctx context.Context) (nicstats.Counters, error) {
	a, err := r.read(ctx)
	if err != nil {
		return nil, err
	}
	return a.Counters, nil
}
