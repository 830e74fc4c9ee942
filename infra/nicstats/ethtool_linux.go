package nicstats

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Ethtool reads driver statistics with the SIOCETHTOOL ioctl, as `ethtool
// -S` does, without the ethtool binary on the host: ETHTOOL_GDRVINFO for
// the count, ETHTOOL_GSTRINGS for the names, ETHTOOL_GSTATS for the values.
//
// The ioctls are written here, as tuning writes ETHTOOL_GCHANNELS: the
// buffer the kernel fills is handed over as a pointer (unsafe.Pointer in
// the ifreq, converted in the syscall's own call), never as a uintptr of a
// stack address. github.com/safchain/ethtool, used first, did the latter:
// when a goroutine's stack grew between the conversion and the syscall the
// buffer moved, the kernel wrote to where it had been, and a read came back
// empty without an error (TestReadsFromFreshGoroutines), or worse, wrote
// into memory the runtime had handed out again.
//
// The name and value buffers are sized for MaxCounters once, so a queue
// count that grows between the count and the reads cannot make the kernel
// write past them; names and values are paired only when both reads
// report the same count.
//
// The ioctl socket belongs to the network namespace of the thread that
// opened it: open inside the namespace (infra/netns Host.Do), read from
// anywhere.
type Ethtool struct {
	fd int
	mu sync.Mutex // guards the buffers
	// names is struct ethtool_gstrings (cmd, string_set, len, then len
	// names of ETH_GSTRING_LEN bytes); values is struct ethtool_stats
	// (cmd, n_stats, then n_stats uint64).
	names, values []byte
}

// ethtool string sets and sizes (<linux/ethtool.h>).
const (
	ethSSStats     = 1
	ethGStringLen  = 32
	gstringsHeader = 12
	gstatsHeader   = 8
)

// OpenEthtool opens the ioctl socket in the calling thread's network
// namespace.
func OpenEthtool() (*Ethtool, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("ethtool socket: %w", err)
	}
	return &Ethtool{fd: fd}, nil
}

// Close closes the socket.
func (e *Ethtool) Close() error {
	return unix.Close(e.fd)
}

// ifreqData mirrors struct ifreq with its union used as ifr_data.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// ioctl runs SIOCETHTOOL on ifname with data as ifr_data.
func (e *Ethtool) ioctl(ifname string, data unsafe.Pointer) error {
	ifr := ifreqData{data: data}
	copy(ifr.name[:], ifname)
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(e.fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); errno != 0 {
		return errno
	}
	return nil
}

// Read returns every driver statistic of ifname. Interfaces without
// driver statistics (loopback) give ErrNoStats.
func (e *Ethtool) Read(ctx context.Context, ifname string) (Counters, error) {
	if err := checkName(ifname); err != nil {
		return nil, err
	}
	info, err := unix.IoctlGetEthtoolDrvinfo(e.fd, ifname)
	if err != nil {
		return nil, fmt.Errorf("driver statistics of %s (ETHTOOL_GDRVINFO): %w", ifname, classify(err))
	}
	n := int(info.N_stats)
	if n > MaxCounters {
		return nil, fmt.Errorf("driver statistics of %s: %d counters, more than %d", ifname, n, MaxCounters)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.names == nil {
		e.names = make([]byte, gstringsHeader+MaxCounters*ethGStringLen)
		e.values = make([]byte, gstatsHeader+MaxCounters*8)
	}
	ne := binary.NativeEndian
	ne.PutUint32(e.names[0:], unix.ETHTOOL_GSTRINGS)
	ne.PutUint32(e.names[4:], ethSSStats)
	ne.PutUint32(e.names[8:], uint32(n))
	if err := e.ioctl(ifname, unsafe.Pointer(&e.names[0])); err != nil {
		return nil, fmt.Errorf("driver statistics of %s (ETHTOOL_GSTRINGS): %w", ifname, classify(err))
	}
	ne.PutUint32(e.values[0:], unix.ETHTOOL_GSTATS)
	ne.PutUint32(e.values[4:], uint32(n))
	if err := e.ioctl(ifname, unsafe.Pointer(&e.values[0])); err != nil {
		return nil, fmt.Errorf("driver statistics of %s (ETHTOOL_GSTATS): %w", ifname, classify(err))
	}
	names, values := int(ne.Uint32(e.names[8:])), int(ne.Uint32(e.values[4:]))
	if names != values || names > MaxCounters {
		return nil, fmt.Errorf("driver statistics of %s: the driver listed %d names and %d values (its queues changed during the read)", ifname, names, values)
	}
	c := make(Counters, names)
	for i := range names {
		b := e.names[gstringsHeader+i*ethGStringLen:][:ethGStringLen]
		if z := bytes.IndexByte(b, 0); z >= 0 {
			b = b[:z]
		}
		if len(b) > 0 {
			c[string(b)] = ne.Uint64(e.values[gstatsHeader+i*8:])
		}
	}
	return c, nil
}

// Driver names the interface's driver (ena, mlx5_core, virtio_net, veth),
// what `ethtool -i` says.
func (e *Ethtool) Driver(ifname string) (string, error) {
	if err := checkName(ifname); err != nil {
		return "", err
	}
	info, err := unix.IoctlGetEthtoolDrvinfo(e.fd, ifname)
	if err != nil {
		if errors.Is(err, unix.ENODEV) {
			err = fmt.Errorf("%w (%v)", ErrNoInterface, err)
		}
		return "", fmt.Errorf("driver of %s (ETHTOOL_GDRVINFO): %w", ifname, err)
	}
	return unix.ByteSliceToString(info.Driver[:]), nil
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

// InterfaceWithAddr names the interface of the calling thread's network
// namespace that carries addr, with its MTU. Call it where the ioctl
// socket is opened (inside the namespace).
func InterfaceWithAddr(addr netip.Addr) (name string, mtu int, err error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return "", 0, fmt.Errorf("list interfaces: %w", err)
	}
	for _, i := range ifs {
		addrs, err := i.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if p, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(p.IP); ok && ip.Unmap() == addr.Unmap() {
					return i.Name, i.MTU, nil
				}
			}
		}
	}
	return "", 0, fmt.Errorf("%w carrying %s", ErrNoInterface, addr)
}

// InterfaceMTU is the MTU of ifname in the calling thread's namespace.
func InterfaceMTU(ifname string) (int, error) {
	i, err := net.InterfaceByName(ifname)
	if err != nil {
		return 0, fmt.Errorf("%w: %s (%v)", ErrNoInterface, ifname, err)
	}
	return i.MTU, nil
}
