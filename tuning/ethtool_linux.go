package tuning

import (
	"context"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// EthtoolChannels reads and sets queue counts with the SIOCETHTOOL ioctl
// (ETHTOOL_GCHANNELS / ETHTOOL_SCHANNELS), what `ethtool -l/-L` does, without
// needing the ethtool binary on the host.
type EthtoolChannels struct {
	// NetnsPath, when set (e.g. /run/netns/lrtune-x), makes the ioctl act on
	// interfaces inside that network namespace instead of the caller's.
	NetnsPath string
}

// ethtoolChannels mirrors struct ethtool_channels in <linux/ethtool.h>.
type ethtoolChannels struct {
	Cmd         uint32
	MaxRX       uint32
	MaxTX       uint32
	MaxOther    uint32
	MaxCombined uint32
	RX          uint32
	TX          uint32
	Other       uint32
	Combined    uint32
}

// ifreqData mirrors struct ifreq with its union used as ifr_data.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// Channels reads the current and maximum queue counts.
func (e EthtoolChannels) Channels(ctx context.Context, ifname string) (Channels, error) {
	ch := ethtoolChannels{Cmd: unix.ETHTOOL_GCHANNELS}
	if err := e.ioctl(ifname, &ch); err != nil {
		return Channels{}, fmt.Errorf("read queue counts of %s (ETHTOOL_GCHANNELS): %w", ifname, err)
	}
	return Channels{MaxRX: ch.MaxRX, MaxTX: ch.MaxTX, MaxOther: ch.MaxOther, MaxCombined: ch.MaxCombined,
		RX: ch.RX, TX: ch.TX, Other: ch.Other, Combined: ch.Combined}, nil
}

// SetChannels sets the counts. Counts left zero keep their current value, as
// `ethtool -L` does for parameters it is not given.
func (e EthtoolChannels) SetChannels(ctx context.Context, ifname string, want QueueCounts) error {
	ch := ethtoolChannels{Cmd: unix.ETHTOOL_GCHANNELS}
	if err := e.ioctl(ifname, &ch); err != nil {
		return fmt.Errorf("read queue counts of %s (ETHTOOL_GCHANNELS): %w", ifname, err)
	}
	ch.Cmd = unix.ETHTOOL_SCHANNELS
	if want.Combined != 0 {
		ch.Combined = want.Combined
	}
	if want.RX != 0 {
		ch.RX = want.RX
	}
	if want.TX != 0 {
		ch.TX = want.TX
	}
	if err := e.ioctl(ifname, &ch); err != nil {
		return fmt.Errorf("set queue counts of %s to %s (ETHTOOL_SCHANNELS): %w", ifname, want, err)
	}
	return nil
}

func (e EthtoolChannels) ioctl(ifname string, ch *ethtoolChannels) error {
	if len(ifname) >= unix.IFNAMSIZ {
		return fmt.Errorf("interface name %q too long", ifname)
	}
	fd, err := e.socket()
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var ifr ifreqData
	copy(ifr.name[:], ifname)
	ifr.data = unsafe.Pointer(ch)
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	runtime.KeepAlive(ch)
	switch {
	case errno == 0:
		return nil
	case errno == unix.EOPNOTSUPP:
		return fmt.Errorf("%w (%v)", ErrNotSupported, errno)
	case errno == unix.ENODEV:
		return fmt.Errorf("%w: %v", ErrUnknownInterface, errno)
	}
	return errno
}

// socket opens the datagram socket the ioctl goes through. A socket belongs
// to the network namespace of the thread that created it, so for NetnsPath
// it is opened in there.
func (e EthtoolChannels) socket() (int, error) {
	open := func() (int, error) { return unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0) }
	if e.NetnsPath == "" {
		return open()
	}
	fd := -1
	err := inNetns(e.NetnsPath, func() error {
		var err error
		if fd, err = open(); err != nil {
			return fmt.Errorf("socket in %s: %w", e.NetnsPath, err)
		}
		return nil
	})
	if err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return -1, err
	}
	return fd, nil
}
