package sweeps

import (
	"context"
	"fmt"
	"net/netip"
	"sync"

	"github.com/linerate/linerate/infra/nicstats"
)

// NIC reads one interface's driver counters in this process
// (a NICSource): the interface carrying Addr, or the one named Name,
// inside the network namespace Do enters (netns.Host.Do; nil: this
// process's own). The ioctl socket is opened in there once and read from
// anywhere after; Close closes it.
type NIC struct {
	Host string // server, client, client-2 …
	Do   func(func() error) error
	Addr netip.Addr
	Name string

	mu   sync.Mutex
	eth  *nicstats.Ethtool
	info NICInfo
}

// open finds the interface and opens the socket, inside the namespace;
// n.mu is held.
func (n *NIC) open() error {
	if n.eth != nil {
		return nil
	}
	do := n.Do
	if do == nil {
		do = func(f func() error) error { return f() }
	}
	info := NICInfo{Host: n.Host, Interface: n.Name}
	var eth *nicstats.Ethtool
	err := do(func() error {
		var err error
		if info.Interface == "" {
			if info.Interface, info.MTU, err = nicstats.InterfaceWithAddr(n.Addr); err != nil {
				return err
			}
		} else if info.MTU, err = nicstats.InterfaceMTU(info.Interface); err != nil {
			return err
		}
		if eth, err = nicstats.OpenEthtool(); err != nil {
			return err
		}
		// The driver is read now, in the namespace: its name resolves there.
		if info.Driver, err = eth.Driver(info.Interface); err != nil {
			eth.Close()
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s's NIC: %w", n.Host, err)
	}
	n.eth, n.info = eth, info
	return nil
}

// NIC names the host's interface, its driver and MTU.
func (n *NIC) NIC(ctx context.Context) (NICInfo, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.open(); err != nil {
		return NICInfo{Host: n.Host}, err
	}
	return n.info, nil
}

// Counters reads every driver statistic of the interface.
func (n *NIC) Counters(ctx context.Context) (nicstats.Counters, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.open(); err != nil {
		return nil, err
	}
	c, err := n.eth.Read(ctx, n.info.Interface)
	if err != nil {
		return nil, fmt.Errorf("%s's NIC: %w", n.Host, err)
	}
	return c, nil
}

// Close closes the socket.
func (n *NIC) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.eth == nil {
		return nil
	}
	err := n.eth.Close()
	n.eth = nil
	return err
}
