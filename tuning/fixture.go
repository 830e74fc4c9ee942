package tuning

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"strings"

	"github.com/linerate/linerate/infra/kernel"
)

// FixtureDir is where a fixture tree keeps the host state that is not a file
// on a real machine: queue counts, unit states and interface addresses.
const FixtureDir = "/_fixture"

// NewFixtureHost is a host described entirely by a tree under root. Queue
// counts live in _fixture/ethtool/<if>.json (a Channels object), unit states
// in _fixture/systemd/<unit>.json (a ServiceStatus object), and addresses in
// _fixture/addresses ("<if> <addr>" per line). Missing files mean "the driver
// has no channel operations", "no such unit" and "no addresses".
func NewFixtureHost(root string) Host {
	fsys := kernel.FS{Root: root}
	fx := fixtureDevices{fs: fsys}
	return Host{FS: fsys, Channels: fx, Services: fx, Addresses: fx}
}

type fixtureDevices struct{ fs FS }

func (f fixtureDevices) readJSON(name string, v any) error {
	b, err := f.fs.ReadFile(name)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("fixture %s: %w", name, err)
	}
	return nil
}

func (f fixtureDevices) writeJSON(name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return f.fs.WriteFile(name, append(b, '\n'))
}

func (f fixtureDevices) Channels(ctx context.Context, ifname string) (Channels, error) {
	if _, err := kernel.ReadNetDevice(f.fs, ifname); err != nil {
		return Channels{}, fmt.Errorf("read queue counts of %s: %w", ifname, ErrUnknownInterface)
	}
	var ch Channels
	err := f.readJSON(FixtureDir+"/ethtool/"+ifname+".json", &ch)
	if errors.Is(err, fs.ErrNotExist) {
		return Channels{}, fmt.Errorf("read queue counts of %s: %w", ifname, ErrNotSupported)
	}
	return ch, err
}

// SetChannels refuses what drivers refuse (EINVAL): counts above the maxima,
// combined queues on a driver without them, and a zero result.
func (f fixtureDevices) SetChannels(ctx context.Context, ifname string, want QueueCounts) error {
	ch, err := f.Channels(ctx, ifname)
	if err != nil {
		return err
	}
	if want.Combined != 0 {
		ch.Combined = want.Combined
	}
	if want.RX != 0 {
		ch.RX = want.RX
	}
	if want.TX != 0 {
		ch.TX = want.TX
	}
	if ch.Combined > ch.MaxCombined || ch.RX > ch.MaxRX || ch.TX > ch.MaxTX || ch.Combined+ch.RX == 0 || ch.Combined+ch.TX == 0 {
		return fmt.Errorf("set queue counts of %s to %s (ETHTOOL_SCHANNELS): invalid argument", ifname, want)
	}
	return f.writeJSON(FixtureDir+"/ethtool/"+ifname+".json", ch)
}

func (f fixtureDevices) Status(ctx context.Context, unit string) (ServiceStatus, error) {
	var st ServiceStatus
	err := f.readJSON(FixtureDir+"/systemd/"+unit+".json", &st)
	if errors.Is(err, fs.ErrNotExist) {
		return ServiceStatus{}, nil
	}
	return st, err
}

func (f fixtureDevices) setActive(unit string, active bool) error {
	st, err := f.Status(context.Background(), unit)
	if err != nil {
		return err
	}
	if !st.Present {
		return fmt.Errorf("%s: %w", unit, errNoUnit)
	}
	st.Active = active
	return f.writeJSON(FixtureDir+"/systemd/"+unit+".json", st)
}

func (f fixtureDevices) Start(ctx context.Context, unit string) error {
	return wrapUnit("start", unit, f.setActive(unit, true))
}
func (f fixtureDevices) Stop(ctx context.Context, unit string) error {
	return wrapUnit("stop", unit, f.setActive(unit, false))
}
func (f fixtureDevices) Restart(ctx context.Context, unit string) error {
	return wrapUnit("restart", unit, f.setActive(unit, true))
}

func (f fixtureDevices) InterfaceWithAddress(ctx context.Context, addr netip.Addr) (string, error) {
	b, err := f.fs.ReadFile(FixtureDir + "/addresses")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 {
			continue
		}
		a, _, _ := strings.Cut(fields[1], "/")
		if p, err := netip.ParseAddr(a); err == nil && p == addr {
			return fields[0], nil
		}
	}
	return "", fmt.Errorf("%w: none carries %s", ErrUnknownInterface, addr)
}
