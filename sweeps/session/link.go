package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/calibrate"
)

// checkClients refuses a campaign whose clients: N its provider cannot
// give (loopback has one client, an ssh block lists its hosts, an aws
// count must agree) and otherwise makes the settings give N (an aws
// count left out becomes 1 + N).
func checkClients(c *sweeps.Campaign, row *Row, s Settings) error {
	n := c.ClientCount()
	if n > 1 && row.Hosts == HostsHere {
		return c.Errorf("clients", "%d client hosts on provider %s: it runs the load on this host alone; use netns, ssh or aws", n, row.Kind)
	}
	if row.Clients == nil {
		return nil
	}
	if err := row.Clients(s, n); err != nil {
		if fields, _ := infra.FieldErrors(err); len(fields) > 0 {
			return c.Provider.Locate(err)
		}
		return fmt.Errorf("%s: %w", c.File, err)
	}
	return nil
}

// calibrator measures the link before the first cell, when the campaign
// asks and the hosts have a link (nil otherwise).
func (s *Session) calibrator() func(ctx context.Context) (*sweeps.Link, error) {
	if !s.c.Calibrates() || s.place.link == nil {
		return nil
	}
	return func(ctx context.Context) (*sweeps.Link, error) {
		return s.calibrate(ctx, s.c.Calibrate)
	}
}

func (s *Session) calibrate(ctx context.Context, k sweeps.Calibration) (*sweeps.Link, error) {
	p := *s.place.link
	p.Log = s.opt.Log
	n := k.Connections
	if n == 0 {
		n = s.c.CalibrationConnections()
	}
	s.opt.logf("link: calibrating %d client host(s) to the server host: 1 and %d connections, GET and SET, %s each", p.Clients, n, k.Duration)
	return calibrate.Measure(ctx, p, k, n)
}

// ErrNoLink is a link calibration asked of hosts that have none: the
// local provider's loopback.
var ErrNoLink = errors.New("the local provider has no link between hosts (loopback); calibrate a netns, ssh or aws pair")

// CheckLink refuses, before anything is made, a calibration of a campaign
// whose hosts have no link.
func (t *Table) CheckLink(c *sweeps.Campaign) error {
	if row, ok := t.Row(c.Provider.Kind); ok && row.Hosts == HostsHere {
		return fmt.Errorf("%s: provider %s: %w", c.File, row.Kind, ErrNoLink)
	}
	return nil
}

// Link calibrates the link between the session's hosts as k says (its
// zero fields the campaign's), tuned as the campaign is, and stores it in
// the run directory's env.json: `linerate link`.
func (s *Session) Link(ctx context.Context, k sweeps.Calibration) (*sweeps.Link, error) {
	if s.place.link == nil {
		return nil, input(ErrNoLink)
	}
	def := s.c.Calibrate
	if k.Duration == 0 {
		k.Duration = def.Duration
	}
	if k.Warmup == 0 {
		k.Warmup = def.Warmup
	}
	if k.ValueSize == 0 {
		k.ValueSize = def.ValueSize
	}
	if k.Connections == 0 {
		k.Connections = s.c.CalibrationConnections()
	}
	snap, _, err := s.tune(ctx)
	if err != nil {
		return nil, err
	}
	l, err := s.calibrate(ctx, k)
	if err != nil {
		return nil, err
	}
	env := &sweeps.Environment{Campaign: s.c.Name, Linerate: sweeps.ThisBuild(), Hosts: s.place.Hosts, Tuning: snap,
		TuningProfile: s.c.Tuning, Link: l, Created: time.Now().UTC()}
	return l, s.store.WriteEnv(env)
}
