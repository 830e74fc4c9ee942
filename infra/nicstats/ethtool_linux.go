package nicstats

import (
	"context"
	"errors"
	"fmt"

	"github.com/safchain/ethtool"
	"golang.org/x/sys/unix"
)

// Ethtool reads driver statistics with the SIOCETHTOOL ioctl, as `ethtool
// -S` does, without the ethtool binary on the host: ETHTOOL_GDRVINFO for
// the count, ETHTOOL_GSTRINGS for the names, ETHTOOL_GSTATS for the values.
//
// It goes through github.com/safchain/ethtool rather than a hand-written
// ioctl beside tuning's ETHTOOL_GCHANNELS: the string-set walk is three
// ioctls with kernel-sized buffers (names of 32 bytes, up to 32768 of
// them), which the library does and is used for in production; it also has
// the channel calls tuning writes by hand today, so one copy can serve
// both. What it does not do, and this package accepts: it sizes the reads
// from GDRVINFO's count, so a queue-count change between its ioctls could
// pair names with the wrong values (tuning never changes queues during a
// window), and its result is a map, so a name a driver lists twice keeps
// one value (ParseEthtoolS does the same, so both readers agree).
//
// The ioctl socket belongs to the network namespace of the thread that
// opened it: open inside the namespace (infra/netns Host.Do), read from
// anywhere.
type Ethtool struct {
	h *ethtool.Ethtool
}

// OpenEthtool opens the ioctl socket in the calling thread's network
// namespace.
func OpenEthtool() (*Ethtool, error) {
	h, err := ethtool.NewEthtool()
	if err != nil {
		return nil, fmt.Errorf("ethtool socket: %w", err)
	}
	return &Ethtool{h: h}, nil
}

// Close closes the socket.
func (e *Ethtool) Close() error {
	e.h.Close()
	return nil
}

// Read returns every driver statistic of ifname. Interfaces without
// driver statistics (loopback) give ErrNoStats.
func (e *Ethtool) Read(ctx context.Context, ifname string) (Counters, error) {
	if err := checkName(ifname); err != nil {
		return nil, err
	}
	m, err := e.h.Stats(ifname)
	if err != nil {
		return nil, fmt.Errorf("driver statistics of %s (ETHTOOL_GSTATS): %w", ifname, classify(err))
	}
	if len(m) > MaxCounters {
		return nil, fmt.Errorf("driver statistics of %s: %d counters, more than %d", ifname, len(m), MaxCounters)
	}
	return Counters(m), nil
}

// Driver names the interface's driver (ena, mlx5_core, virtio_net, veth),
// what `ethtool -i` says.
func (e *Ethtool) Driver(ifname string) (string, error) {
	if err := checkName(ifname); err != nil {
		return "", err
	}
	d, err := e.h.DriverName(ifname)
	if err != nil {
		if errors.Is(err, unix.ENODEV) {
			err = fmt.Errorf("%w (%v)", ErrNoInterface, err)
		}
		return "", fmt.Errorf("driver of %s (ETHTOOL_GDRVINFO): %w", ifname, err)
	}
	return d, nil
}

// ErrNoStats says the interface has no driver statistics.
var ErrNoStats = errors.New("the driver has no statistics")

// ErrNoInterface says there is no such interface in the namespace.
var ErrNoInterface = errors.New("no such interface")

func classify(err error) error {
	switch {
	case errors.Is(err, unix.EOPNOTSUPP):
		return fmt.Errorf("%w (%v)", ErrNoStats, err)
	case errors.Is(err, unix.ENODEV):
		return fmt.Errorf("%w (%v)", ErrNoInterface, err)
	}
	return err
}

// checkName refuses what the ioctl would truncate into another interface's
// name.
func checkName(ifname string) error {
	if ifname == "" || len(ifname) >= unix.IFNAMSIZ {
		return fmt.Errorf("interface name %q: use 1-%d characters", ifname, unix.IFNAMSIZ-1)
	}
	return nil
}
