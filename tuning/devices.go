package tuning

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/linerate/linerate/infra/kernel"
)

// Channels is a NIC's queue counts as ETHTOOL_GCHANNELS reports them: the
// maxima the driver allows and the current counts. Drivers either have
// combined queues (ENA, virtio, mlx5) or separate rx/tx ones (veth).
type Channels struct {
	MaxRX       uint32 `json:"max_rx"`
	MaxTX       uint32 `json:"max_tx"`
	MaxOther    uint32 `json:"max_other"`
	MaxCombined uint32 `json:"max_combined"`
	RX          uint32 `json:"rx"`
	TX          uint32 `json:"tx"`
	Other       uint32 `json:"other"`
	Combined    uint32 `json:"combined"`
}

// Counts returns only the current counts, the part apply changes and revert
// restores.
func (c Channels) Counts() QueueCounts {
	return QueueCounts{Combined: c.Combined, RX: c.RX, TX: c.TX}
}

// QueueCounts is the settable part of Channels.
type QueueCounts struct {
	Combined uint32 `json:"combined,omitempty"`
	RX       uint32 `json:"rx,omitempty"`
	TX       uint32 `json:"tx,omitempty"`
}

// ErrNotSupported is returned when the driver has no channel operations
// (loopback, a veth created with one queue on some kernels).
var ErrNotSupported = errors.New("not supported by the driver")

// ChannelController reads and sets queue counts; on a real host it is the
// ethtool ioctl (EthtoolChannels).
type ChannelController interface {
	Channels(ctx context.Context, ifname string) (Channels, error)
	// SetChannels sets the current counts; the Max fields are ignored.
	SetChannels(ctx context.Context, ifname string, want QueueCounts) error
}

// ServiceStatus is what tuning needs to know about a systemd unit.
type ServiceStatus struct {
	Present bool `json:"present"` // the unit exists and a service manager runs
	Active  bool `json:"active"`
}

// ServiceController starts and stops units; on a real host it is systemctl.
type ServiceController interface {
	Status(ctx context.Context, unit string) (ServiceStatus, error)
	Start(ctx context.Context, unit string) error
	Stop(ctx context.Context, unit string) error
	Restart(ctx context.Context, unit string) error
}

// AddressResolver finds the interface that carries an address, for profiles
// that name the NIC by its data-plane address.
type AddressResolver interface {
	InterfaceWithAddress(ctx context.Context, addr netip.Addr) (string, error)
}

// Host is the whole seam: files under a root, plus the parts that are not
// files. NewLiveHost gives the real ones; NewFixtureHost keeps the non-file
// state in files under the root so a fixture tree is a complete host.
type Host struct {
	FS        FS
	Channels  ChannelController
	Services  ServiceController
	Addresses AddressResolver
	// Scope is which of the host's settings are tuned (WithScope); the
	// zero value is all of them.
	Scope Scope
}

// NewLiveHost is the running machine: files under "/" (or root, for a host
// whose /proc and /sys are mounted elsewhere), the ethtool ioctl, systemctl
// and the kernel's interface addresses.
func NewLiveHost(root string) Host {
	fsys := kernel.FS{Root: root}
	return Host{
		FS:        fsys,
		Channels:  EthtoolChannels{},
		Services:  Systemctl{FS: fsys},
		Addresses: KernelAddresses{},
	}
}

// String renders counts the way `ethtool -L` takes them.
func (q QueueCounts) String() string {
	s := ""
	add := func(k string, v uint32) {
		if v != 0 {
			if s != "" {
				s += " "
			}
			s += fmt.Sprintf("%s %d", k, v)
		}
	}
	add("combined", q.Combined)
	add("rx", q.RX)
	add("tx", q.TX)
	if s == "" {
		return "unchanged"
	}
	return s
}
