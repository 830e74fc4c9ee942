// Package engine runs one bench on this host: the raw epoll engine (the
// instrument) and the valkey-go engine (its cross-check) drive a
// lab.Workload at a server and return a lab.Result.
package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"strconv"
	"strings"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/control"
	"github.com/linerate/linerate/lab/exitcode"
	"github.com/linerate/linerate/lab/fields"
)

// Options are the parts of a run that are not the workload.
type Options struct {
	Given    []string  // the command line as typed, stored in the record
	Progress io.Writer // one line a second; nil for quiet
	RunID    string
	// OnPhase is called as warmup, the measured window and the drain begin,
	// so host metrics can be cut to the window. It must return quickly.
	OnPhase func(lab.Phase)
	// Live, when set, gets the run's running totals once a second (the
	// progress tick) and once more, Final, when the workers have stopped.
	// It is called off the workers' threads and must return quickly.
	Live func(*lab.Live)
	// MemAvailable reads this host's free memory, for the prefill check
	// of a server on this host (infra/kernel's FS.MemAvailable); nil skips
	// that check.
	MemAvailable func() (int64, error)
}

// RunError carries the exit code that goes with a failed run.
type RunError struct {
	Reason lab.StopReason
	Err    error
}

func (e *RunError) Error() string { return string(e.Reason) + ": " + e.Err.Error() }

func (e *RunError) Unwrap() error { return e.Err }

// Run executes one bench run. It returns a Result whenever it got far
// enough to have measured anything or to say why it could not, together
// with an error when the run did not complete.
func Run(ctx context.Context, given lab.Workload, opt Options) (*lab.Result, error) {
	w := given.Resolve()
	if err := fields.Validate(w); err != nil {
		return nil, err
	}
	if len(w.CPUList) > 0 {
		if err := checkCPUs(w.CPUList); err != nil {
			return nil, err
		}
	}
	res := newResult(w, opt)
	fail := func(reason lab.StopReason, err error) (*lab.Result, error) {
		res.Ended = time.Now().UTC()
		res.Stop = lab.Stop{Reason: reason, Error: err.Error(), ExitCode: exitcode.For(reason)}
		return res, &RunError{Reason: reason, Err: err}
	}

	tlsCfg, err := fields.TLSConfig(w.TLS, w.Host)
	if err != nil {
		return nil, err // a file named by a flag: bad input
	}
	ctl, err := control.DialWith(ctx, w, control.Options{TLS: tlsCfg})
	if err != nil {
		if strings.Contains(err.Error(), "NOAUTH") {
			err = fmt.Errorf("%w (the server wants a password: -a, --user, or $LINERATE_PASSWORD)", err)
		}
		return fail(lab.StopSetupFailed, err)
	}
	defer ctl.Close()
	if res.Server, err = ctl.ServerInfo(ctx); err != nil {
		return fail(lab.StopSetupFailed, err)
	}
	if err := serverTakes(w, res.Server, opt.MemAvailable); err != nil {
		return fail(lab.StopSetupFailed, err)
	}
	var rt *route
	if w.Cluster {
		if rt, err = readRoute(ctx, w); err != nil {
			var fe *fields.FieldError
			if errors.As(err, &fe) {
				return nil, err
			}
			return fail(lab.StopSetupFailed, err)
		}
	}
	e, err := openEngine(w, rt)
	if err != nil {
		return fail(lab.StopSetupFailed, err)
	}
	defer e.shutdown()
	if err := e.planPacing(); err != nil {
		return fail(lab.StopSetupFailed, err)
	}
	e.onLive = opt.Live
	if res.Server != nil {
		e.serverName = res.Server.Name + "-" + res.Server.Version
	}

	if w.Prefill {
		if err := e.prefill(ctx, opt.Progress); err != nil {
			return fail(stopReasonFor(ctx, lab.StopSetupFailed), err)
		}
		if err := checkPrefilled(ctx, w, ctl, rt, res.Server); err != nil {
			return fail(lab.StopSetupFailed, err)
		}
	}
	mapPCTableOnceOnly() // before the window: its first reads fault (pctable_linux.go)
	e.measure(ctx, opt.Progress, opt.OnPhase)
	e.collect(res)
	res.Ended = time.Now().UTC()
	return res, finishStop(ctx, res, e)
}

// serverTakes refuses, before a connection opens for load, values above
// the server's proto-max-bulk-len and a prefill that cannot fit (it would
// end in evictions, OOM errors or a killed server).
func serverTakes(w lab.Workload, srv *lab.ServerInfo, memAvailable func() (int64, error)) error {
	if lim, ok := srv.Config["proto-max-bulk-len"]; ok {
		if n, err := strconv.ParseInt(lim, 10, 64); err == nil && int64(max(w.ValueSz.Max(), w.Probe.Size)) > n {
			return &fields.FieldError{Field: "-s/--value-size",
				Msg: fmt.Sprintf("%d bytes exceeds the server's proto-max-bulk-len (%d); raise it with CONFIG SET proto-max-bulk-len or use a smaller -s", int64(max(w.ValueSz.Max(), w.Probe.Size)), n)}
		}
	}
	if w.Prefill {
		return fields.CheckPrefillFits(w, srv, memAvailable)
	}
	return nil
}

// checkPrefilled reads DBSIZE (of every node, in a cluster) into srv and
// fails when the prefill's keys are not all there.
func checkPrefilled(ctx context.Context, w lab.Workload, ctl *control.Conn, rt *route, srv *lab.ServerInfo) error {
	n, err := ctl.DBSize(ctx)
	if rt != nil {
		n, err = rt.dbSize(ctx, w)
	}
	if err != nil {
		return err
	}
	srv.DBSizeAfterPrefill = &n
	keys := int64(w.Keyspace)
	if !w.Probe.IsZero() {
		keys += lab.ProbeKeys
	}
	if n < keys {
		return fmt.Errorf("prefill wrote %d keys but DBSIZE is %d", keys, n)
	}
	return nil
}

func newResult(w lab.Workload, opt Options) *lab.Result {
	id := opt.RunID
	if id == "" {
		id = fmt.Sprintf("%s-%04x", time.Now().UTC().Format("20060102T150405Z"), rand.Intn(1<<16))
	}
	return &lab.Result{
		Schema:   lab.SchemaVersion,
		RunID:    id,
		Linerate: lab.Build(),
		Started:  time.Now().UTC(),
		Given:    opt.Given,
		Workload: w,
		Ops:      map[lab.Op]*lab.OpResult{},
		Phases:   map[lab.Phase]*lab.PhaseTotals{},
		Errors:   map[lab.ErrorKind]uint64{},
		Engine:   lab.EngineInfo{Name: w.Engine},
		Window:   lab.Window{Warmup: w.Warmup, Requested: w.Duration},
	}
}

func stopReasonFor(ctx context.Context, otherwise lab.StopReason) lab.StopReason {
	if ctx.Err() != nil {
		return lab.StopInterrupted
	}
	return otherwise
}

// finishStop decides how the run ended from what the workers saw.
func finishStop(ctx context.Context, res *lab.Result, e *engine) error {
	var errCount uint64
	for _, n := range res.Errors {
		errCount += n
	}
	reason := lab.StopCompleted
	var err error
	switch {
	case ctx.Err() != nil:
		reason, err = lab.StopInterrupted, errors.New("interrupted before the window closed")
	case e.allDead():
		reason, err = lab.StopServerLost, fmt.Errorf("every connection failed: %w", e.firstErr())
	case errCount > 0:
		reason, err = lab.StopErrors, fmt.Errorf("%d requests failed (see errors)", errCount)
	}
	res.Stop = lab.Stop{Reason: reason, ExitCode: exitcode.For(reason)}
	if err != nil {
		res.Stop.Error = err.Error()
		return &RunError{Reason: reason, Err: err}
	}
	return nil
}

// openEngine opens the engine the workload names.
func openEngine(w lab.Workload, rt *route) (*engine, error) {
	if w.Engine == lab.EngineValkeyGo {
		return newValkeyGoEngine(w)
	}
	return newRoutedEngine(w, rt)
}
