package tuning

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"time"
)

// Systemctl drives units through systemctl. A host without a running
// systemd (a container, this CI's VM) has no units: Status says not present.
type Systemctl struct{ FS FS }

const systemctlTimeout = 30 * time.Second

func (s Systemctl) run(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, systemctlTimeout)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, "systemctl", args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil && errb.Len() > 0 {
		err = fmt.Errorf("%w: %s", err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), err
}

// Status reports whether the unit is loaded and active.
func (s Systemctl) Status(ctx context.Context, unit string) (ServiceStatus, error) {
	// systemd creates /run/systemd/system at boot; without it systemctl
	// cannot talk to a manager and every unit is absent.
	if _, err := s.FS.ReadDir("/run/systemd/system"); err != nil {
		return ServiceStatus{}, nil
	}
	if _, err := exec.LookPath("systemctl"); err != nil {
		return ServiceStatus{}, nil
	}
	load, err := s.run(ctx, "show", "--property=LoadState", "--value", unit)
	if err != nil {
		return ServiceStatus{}, fmt.Errorf("systemctl show %s: %w", unit, err)
	}
	if load != "loaded" {
		return ServiceStatus{}, nil
	}
	// is-active exits non-zero for inactive units; its output is the answer.
	state, _ := s.run(ctx, "is-active", unit)
	return ServiceStatus{Present: true, Active: state == "active" || state == "activating" || state == "reloading"}, nil
}

// Start starts a unit.
func (s Systemctl) Start(ctx context.Context, unit string) error {
	_, err := s.run(ctx, "start", unit)
	return wrapUnit("start", unit, err)
}

// Stop stops a unit.
func (s Systemctl) Stop(ctx context.Context, unit string) error {
	_, err := s.run(ctx, "stop", unit)
	return wrapUnit("stop", unit, err)
}

// Restart restarts a unit so it rereads its configuration.
func (s Systemctl) Restart(ctx context.Context, unit string) error {
	_, err := s.run(ctx, "restart", unit)
	return wrapUnit("restart", unit, err)
}

func wrapUnit(op, unit string, err error) error {
	if err != nil {
		return fmt.Errorf("systemctl %s %s: %w", op, unit, err)
	}
	return nil
}

// KernelAddresses asks the kernel which interface carries an address.
type KernelAddresses struct{}

// InterfaceWithAddress returns the interface with addr assigned.
func (KernelAddresses) InterfaceWithAddress(ctx context.Context, addr netip.Addr) (string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return "", fmt.Errorf("list interfaces: %w", err)
	}
	for _, ifc := range ifs {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Unmap() == addr.Unmap() {
				return ifc.Name, nil
			}
		}
	}
	return "", fmt.Errorf("%w: none carries %s", ErrUnknownInterface, addr)
}

var errNoUnit = errors.New("unit not present")
