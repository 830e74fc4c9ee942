package tuning

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/linerate/linerate/infra/kernel"
	"github.com/linerate/linerate/lab/cpus"
)

// Apply tunes the host to the profile: it takes a snapshot of everything it
// will touch, makes the changes (irqbalance off first, so it cannot move
// IRQs while they are pinned; queue counts next, since a queue change can
// recreate IRQs; then IRQ affinities, sysctls, and irqbalance's config if it
// is to run), then verifies. If the kernel refuses a change, or verify finds
// drift, apply restores the snapshot and returns the error; the snapshot is
// returned either way so the caller can store it.
func Apply(ctx context.Context, h Host, p Profile) (Snapshot, Report, error) {
	return ApplyWith(ctx, h, p, nil)
}

// ApplyWith is Apply with a hook that stores the snapshot before anything is
// changed, so a process killed halfway still leaves a way back. An error
// from save stops apply before its first change.
func ApplyWith(ctx context.Context, h Host, p Profile, save func(Snapshot) error) (Snapshot, Report, error) {
	pl, err := MakePlan(ctx, h, p)
	if err != nil {
		return Snapshot{}, Report{}, err
	}
	snap := Snapshot{Version: SnapshotVersion, Taken: time.Now().UTC(), Profile: p, Scope: h.Scope, State: pl.Current}
	if save != nil {
		if err := save(snap); err != nil {
			return Snapshot{}, Report{}, fmt.Errorf("apply: save snapshot: %w", err)
		}
	}
	a := &applier{h: h, p: p, save: save, snap: snap, d: pl.Desired, cur: pl.Current}
	for _, step := range []func(context.Context) error{a.stopIrqbalance, a.setQueues, a.pinIRQs, a.setSysctls, a.runIrqbalance} {
		if err := step(ctx); err != nil {
			return a.rollBack(ctx, err)
		}
	}
	rep, err := Verify(ctx, h, p)
	if err != nil {
		return a.rollBack(ctx, fmt.Errorf("verify after apply: %w", err))
	}
	if !rep.OK {
		return a.rollBack(ctx, fmt.Errorf("verify after apply: %d drifts, first: %s", len(rep.Drifts), rep.Drifts[0]))
	}
	return a.snap, rep, nil
}

// applier is one Apply under way: the snapshot (grown when a queue change
// brings new IRQs), what is wanted and what was there.
type applier struct {
	h    Host
	p    Profile
	save func(Snapshot) error
	snap Snapshot
	d    Desired
	cur  State
}

// rollBack restores the snapshot after err.
func (a *applier) rollBack(ctx context.Context, err error) (Snapshot, Report, error) {
	if rerr := Revert(context.WithoutCancel(ctx), a.h, a.snap); rerr != nil {
		return a.snap, Report{}, fmt.Errorf("apply: %w; rollback incomplete: %v", err, rerr)
	}
	return a.snap, Report{}, fmt.Errorf("apply: %w (rolled back to the snapshot)", err)
}

// stopIrqbalance stops irqbalance first, so it cannot move IRQs while
// they are pinned.
func (a *applier) stopIrqbalance(ctx context.Context) error {
	if ib := a.cur.Irqbalance; ib != nil && ib.Present && ib.Active && a.d.Irqbalance == IrqbalanceStopped {
		return a.h.Services.Stop(ctx, IrqbalanceUnit)
	}
	return nil
}

// setQueues sets the queue counts. Drivers may free and request IRQs
// again on a queue change: the pins are then decided again from the NIC
// as it is now, and the snapshot takes in the IRQs it did not have.
func (a *applier) setQueues(ctx context.Context) error {
	d, cur := a.d, a.cur
	if d.Queues == nil || cur.Queues == nil || queuesMatch(*cur.Queues, *d.Queues) {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := a.h.Channels.SetChannels(ctx, d.NIC, *d.Queues); err != nil {
		return err
	}
	facts, err := ReadFacts(ctx, a.h, a.p)
	if err != nil {
		return err
	}
	if d, err = Resolve(a.p, facts); err != nil {
		return err
	}
	a.d = narrow(a.h, d)
	for _, pin := range a.d.IRQs {
		if slices.ContainsFunc(a.snap.State.IRQs, func(x IRQAffinity) bool { return x.IRQ == pin.IRQ }) {
			continue
		}
		cpus, err := kernel.ReadIRQAffinity(a.h.FS, pin.IRQ)
		if err != nil {
			return err
		}
		a.snap.State.IRQs = append(a.snap.State.IRQs, IRQAffinity{IRQ: pin.IRQ, Name: pin.Name, CPUs: cpus})
		if a.save != nil {
			if err := a.save(a.snap); err != nil {
				return fmt.Errorf("save snapshot: %w", err)
			}
		}
	}
	return nil
}

// pinIRQs writes each IRQ's affinity that differs.
func (a *applier) pinIRQs(ctx context.Context) error {
	have := map[int]cpus.List{}
	for _, x := range a.snap.State.IRQs {
		have[x.IRQ] = x.CPUs
	}
	for _, pin := range a.d.IRQs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if have[pin.IRQ].Equal(pin.CPUs) {
			continue
		}
		if err := writeValue(a.h.FS, kernel.IRQAffinityPath(pin.IRQ), pin.CPUs.String()); err != nil {
			return fmt.Errorf("pin IRQ %d (%s) to CPUs %s: %w", pin.IRQ, pin.Name, pin.CPUs, err)
		}
	}
	return nil
}

// setSysctls writes the profile's sysctls.
func (a *applier) setSysctls(ctx context.Context) error {
	for _, s := range a.d.Sysctls {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := writeValue(a.h.FS, kernel.SysctlPath(s.Name), s.Value); err != nil {
			return fmt.Errorf("set sysctl %s: %w", s.Name, err)
		}
	}
	return nil
}

// runIrqbalance, when irqbalance is to run, writes its config (banned
// CPUs and IRQs) and starts or restarts it.
func (a *applier) runIrqbalance(ctx context.Context) error {
	ib := a.cur.Irqbalance
	if ib == nil || a.d.Irqbalance != IrqbalanceRunning {
		return nil
	}
	old := ""
	if ib.Config != nil {
		old = *ib.Config
	}
	want := irqbalanceConfig(old, a.d.IrqbalanceBanned, a.d.IrqbalanceBanIRQs)
	if want != old {
		if err := a.h.FS.WriteFile(ib.ConfigPath, []byte(want)); err != nil {
			return &RefusedError{Path: ib.ConfigPath, Value: configSummary(want), Err: err}
		}
	}
	switch {
	case !ib.Active:
		return a.h.Services.Start(ctx, IrqbalanceUnit)
	case want != old:
		return a.h.Services.Restart(ctx, IrqbalanceUnit)
	}
	return nil
}

// Revert restores a snapshot, writing only what differs from it now: sysctls,
// queue counts (before affinities, since a queue change can reset them), IRQ
// affinities, irqbalance's config file, and whether irqbalance runs. It goes
// on past failures and returns them all.
func Revert(ctx context.Context, h Host, snap Snapshot) error {
	if snap.Version != SnapshotVersion {
		return fmt.Errorf("revert: snapshot version %d, this linerate reads version %d", snap.Version, SnapshotVersion)
	}
	want := snap.State
	var errs []error
	note := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if want.Irqbalance != nil {
		if ibNow, err := readIrqbalance(ctx, h); err != nil {
			note(err)
		} else if ibNow.Present && ibNow.Active && !want.Irqbalance.Active {
			note(h.Services.Stop(ctx, IrqbalanceUnit))
		}
	}
	for _, step := range []func(context.Context, Host, State, func(error)){revertSysctls, revertQueues, revertIRQs, revertIrqbalance} {
		step(ctx, h, want, note)
	}
	if len(errs) > 0 {
		return fmt.Errorf("revert: %w", errors.Join(errs...))
	}
	return nil
}

func revertSysctls(_ context.Context, h Host, want State, note func(error)) {
	for _, s := range want.Sysctls {
		if got, err := kernel.ReadSysctl(h.FS, s.Name); err == nil && normalizeSysctl(got) == normalizeSysctl(s.Value) {
			continue
		}
		if err := writeValue(h.FS, kernel.SysctlPath(s.Name), s.Value); err != nil {
			note(fmt.Errorf("restore sysctl %s: %w", s.Name, err))
		}
	}
}

func revertQueues(ctx context.Context, h Host, want State, note func(error)) {
	if want.Queues == nil {
		return
	}
	ch, err := h.Channels.Channels(ctx, want.NIC)
	switch {
	case err != nil:
		note(fmt.Errorf("restore queue counts: %w", err))
	case ch.Counts() != *want.Queues:
		note(h.Channels.SetChannels(ctx, want.NIC, *want.Queues))
	}
}

func revertIRQs(ctx context.Context, h Host, want State, note func(error)) {
	for _, a := range want.IRQs {
		if ctx.Err() != nil {
			note(ctx.Err())
			return
		}
		if got, err := kernel.ReadIRQAffinity(h.FS, a.IRQ); err == nil && got.Equal(a.CPUs) {
			continue
		}
		if err := writeValue(h.FS, kernel.IRQAffinityPath(a.IRQ), a.CPUs.String()); err != nil {
			note(fmt.Errorf("restore IRQ %d (%s) to CPUs %s: %w", a.IRQ, a.Name, a.CPUs, err))
		}
	}
}

// revertIrqbalance restores irqbalance's config file, then starts it
// again when it ran (restarted when its config changed).
func revertIrqbalance(ctx context.Context, h Host, want State, note func(error)) {
	ib := want.Irqbalance
	if ib == nil || !ib.Present {
		return
	}
	configChanged := false
	cur, err := h.FS.ReadFile(ib.ConfigPath)
	switch {
	case ib.Config == nil && err == nil:
		configChanged = true
		if err := h.FS.Remove(ib.ConfigPath); err != nil {
			note(fmt.Errorf("restore %s (remove it): %w", ib.ConfigPath, err))
		}
	case ib.Config != nil && (err != nil || string(cur) != *ib.Config):
		configChanged = true
		if err := h.FS.WriteFile(ib.ConfigPath, []byte(*ib.Config)); err != nil {
			note(&RefusedError{Path: ib.ConfigPath, Value: configSummary(*ib.Config), Err: err})
		}
	}
	if !ib.Active {
		return
	}
	now, err := h.Services.Status(ctx, IrqbalanceUnit)
	switch {
	case err != nil:
		note(err)
	case !now.Active:
		note(h.Services.Start(ctx, IrqbalanceUnit))
	case configChanged:
		note(h.Services.Restart(ctx, IrqbalanceUnit))
	}
}

// CaptureLike reads the host's current state over exactly what a snapshot
// covers, so a caller can compare the two field for field.
func CaptureLike(ctx context.Context, h Host, snap Snapshot) (State, error) {
	return capture(ctx, h, scopeOf(snap.State))
}

// Drift is one way the host differs from the profile.
type Drift struct {
	What   string `json:"what"` // irqbalance, irqbalance-config, queues, irq, sysctl
	Object string `json:"object"`
	Path   string `json:"path,omitempty"`
	Want   string `json:"want"`
	Got    string `json:"got"`
}

func (d Drift) String() string {
	where := d.Object
	if d.Path != "" {
		where += " (" + d.Path + ")"
	}
	return fmt.Sprintf("%s %s: want %s, got %s", d.What, where, d.Want, d.Got)
}

// Report is verify's answer, a plain record the sweeps runner stores with
// each cell.
type Report struct {
	Checked    time.Time `json:"checked"`
	NIC        string    `json:"nic"`
	OK         bool      `json:"ok"`
	Drifts     []Drift   `json:"drifts"`
	IRQCPUs    cpus.List `json:"irq_cpus"`
	ServerCPUs cpus.List `json:"server_cpus"`
	ClientCPUs cpus.List `json:"client_cpus"`
	Notes      []string  `json:"notes,omitempty"`
}

// Verify compares the host with the profile and lists every drift: an IRQ
// moved (after an ENA device reset they can pile onto one core), irqbalance
// running again, a queue count changed, a sysctl reset. The error is for a
// host that cannot be read, not for drift.
func Verify(ctx context.Context, h Host, p Profile) (Report, error) {
	rep := Report{Checked: time.Now().UTC(), Drifts: []Drift{}}
	facts, err := ReadFacts(ctx, h, p)
	if err != nil {
		return rep, err
	}
	d, err := Resolve(p, facts)
	if err != nil {
		return rep, err
	}
	d = narrow(h, d)
	rep.NIC, rep.IRQCPUs, rep.ServerCPUs, rep.ClientCPUs, rep.Notes = d.NIC, d.IRQCPUs, d.ServerCPUs, d.ClientCPUs, d.Notes
	cur, err := capture(ctx, h, scopeFor(h, facts, d))
	if err != nil {
		return rep, err
	}
	for _, c := range diff(cur, d) {
		rep.Drifts = append(rep.Drifts, Drift{What: c.What, Object: c.Object, Path: c.Path, Want: c.To, Got: c.From})
	}
	rep.OK = len(rep.Drifts) == 0
	return rep, nil
}

// WriteText renders the report for a person.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	if r.OK {
		fmt.Fprintf(&b, "ok: %s matches the profile (IRQ CPUs %s, server %s, client %s)\n", r.NIC, orNone(r.IRQCPUs), orNone(r.ServerCPUs), orNone(r.ClientCPUs))
	} else {
		fmt.Fprintf(&b, "drift: %d difference(s) from the profile on %s\n", len(r.Drifts), r.NIC)
		for _, d := range r.Drifts {
			fmt.Fprintf(&b, "  %s\n", d)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
