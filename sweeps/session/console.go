package session

// What the operator gives on a command line beside the campaign: run
// options checked before anything starts, their consent at a console,
// the plan shown before it runs.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/sweeps"
)

// Bounds on run options; beyond them a value is a typo.
const (
	MaxMaxAttempts = 100
	MaxLinkGbps    = 10000
	MinSoak        = 10 * time.Second
)

// Check finds what is wrong with the options before anything starts.
// Its errors are *InputError.
func (o RunOptions) Check() error {
	if o.MaxAttempts < 1 || o.MaxAttempts > MaxMaxAttempts {
		return input(fmt.Errorf("--max-attempts %d: use 1-%d", o.MaxAttempts, MaxMaxAttempts))
	}
	// Written so that NaN fails too.
	if !(o.LinkGbps >= 0 && o.LinkGbps <= MaxLinkGbps) {
		return input(fmt.Errorf("--link-gbps %g: use 0 (unknown) to %d", o.LinkGbps, MaxLinkGbps))
	}
	if o.Only != "" {
		if _, err := path.Match(o.Only, ""); err != nil {
			return input(fmt.Errorf("--only %q: %v; use a pattern such as 'valkey-9.1.2/GET/*/*'", o.Only, err))
		}
	}
	return nil
}

// RunDir is where a campaign or pair named name keeps its run: dir when
// given, else runs/NAME ("" without a name).
func RunDir(dir, name string) string {
	if dir != "" || name == "" {
		return dir
	}
	return filepath.Join("runs", name)
}

// PlanOrSelectors is Plan with the default table. With warn set (a plan
// only shown), versions this machine cannot resolve keep their selectors
// in the cell IDs, and warn says why.
func PlanOrSelectors(ctx context.Context, c *sweeps.Campaign, warn func(error)) (*sweeps.Plan, error) {
	p, err := Plan(ctx, c, nil)
	if err != nil && warn != nil {
		warn(fmt.Errorf("cell IDs show selectors, not exact versions: %w", err))
		p, err = sweeps.NewPlan(ctx, c, nil)
	}
	return p, err
}

// PlanWork is what a run of p's cells matching only needs its hosts for.
// Before remote versions resolve, only may match no cell ID yet: then the
// whole plan is what the hosts must outlive.
func PlanWork(p *sweeps.Plan, only string) Work {
	need := p.EstimateOf(Only(only))
	if need == 0 {
		need = p.EstimateOf(nil)
	}
	return Work{What: "the plan", Need: need}
}

// LoadSoak checks a soak of o.Cell in the run directory dir before the
// directory's lock is taken and before any host is up or tuned (a typo
// costs nothing), and loads the campaign the run stored: the soak runs
// where it ran. Its errors are *InputError.
func (t *Table) LoadSoak(dir string, o SoakOptions) (*sweeps.Campaign, error) {
	if o.Duration < MinSoak || o.Duration > lab.MaxDuration {
		return nil, input(fmt.Errorf("--duration %s: use %s to %s; drift needs a series (e.g. 15m)", o.Duration, MinSoak, lab.MaxDuration))
	}
	if _, err := sweeps.SoakCell(dir, o.Cell); err != nil {
		if errors.Is(err, sweeps.ErrNoSuchCell) {
			err = fmt.Errorf("--cell: %w", err)
		} // a missing or unreadable directory names itself
		return nil, input(err)
	}
	c, err := t.Load(filepath.Join(dir, sweeps.CampaignFile))
	return c, input(err)
}

// ParseSSHFrom reads the operator's --ssh-from; "" is none given (an
// invalid prefix: the campaign's own stands).
func ParseSSHFrom(s string) (netip.Prefix, error) {
	if s == "" {
		return netip.Prefix{}, nil
	}
	pfx, err := netip.ParsePrefix(s)
	if err != nil {
		return pfx, input(fmt.Errorf("--ssh-from %q: want a CIDR such as 203.0.113.7/32", s))
	}
	return pfx, nil
}

// Console is the operator at a console: AWS keys from the environment
// when KeysFromEnv, progress lines on out, and what a pair costs told on
// out and consent asked on in (yes: given without asking).
func (op *Operator) Console(in io.Reader, out io.Writer, yes bool) {
	if op.KeysFromEnv {
		op.AWS.KeysFromEnv()
	}
	op.Log = func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	op.Confirm = func(cost string) bool {
		fmt.Fprint(out, cost)
		if yes {
			return true
		}
		fmt.Fprint(out, "Launch? [y/N] ")
		line, _ := bufio.NewReader(in).ReadString('\n')
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return true
		}
		return false
	}
}
