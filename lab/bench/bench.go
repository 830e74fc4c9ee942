package bench

import (
	"context"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/engine"
	"github.com/linerate/linerate/lab/fields"
)

// Bencher runs a campaign's cells with engine.Run in this process (the
// runner's sweeps.Bencher).
type Bencher struct {
	RunID func(w lab.Workload) string // optional run IDs
	Live  func(*lab.Live)             // optional: each tick of the run (engine.Options.Live)
	// MemAvailable reads this host's free memory for the prefill check
	// (engine.Options.MemAvailable: infra/kernel's); nil skips it.
	MemAvailable func() (int64, error)
}

// Bench runs one cell. engine.Run marks the window's edges, so
// the runner's host snapshots cover exactly the measured window.
func (b Bencher) Bench(ctx context.Context, w lab.Workload, mark func(lab.Phase)) (*lab.Result, error) {
	opt := engine.Options{Given: append([]string{"linerate", "bench"}, fields.Args(w)...), OnPhase: mark, Live: b.Live,
		MemAvailable: b.MemAvailable}
	if b.RunID != nil {
		opt.RunID = b.RunID(w)
	}
	return engine.Run(ctx, w, opt)
}
