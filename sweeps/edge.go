package sweeps

import (
	"fmt"
	"time"

	"github.com/linerate/linerate/lab"
)

// EdgeWarnings are the plan's cells (one line per cell key) whose requests
// will likely last more than lab.EdgeFraction of their window: the largest
// value (or an MGET/MSET's keys) moved at estimate.prefill-rate, the rate
// the estimates expect the link to move, shared by every request in
// flight. Such a cell's record would carry an edge bias (lab.EdgeBias):
// requests begun in the warmup counted whole in the window.
func (p *Plan) EdgeWarnings() []string {
	rate := float64(p.Campaign.Estimate.PrefillRate)
	if rate <= 0 {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, c := range p.Cells {
		w := c.Workload
		win := w.Duration.D()
		if win <= 0 || seen[c.Key] {
			continue
		}
		seen[c.Key] = true
		size := w.ValueSz.Max()
		if w.Command.Multi() {
			size *= lab.Size(max(w.KeysPerOp, 1))
		}
		inFlight := max(w.Connections, 1) * max(w.Pipeline, 1)
		req := time.Duration(float64(size) * float64(inFlight) / rate * float64(time.Second))
		if req.Seconds() <= lab.EdgeFraction*win.Seconds() {
			continue
		}
		out = append(out, fmt.Sprintf("%s: a %s request takes about %s with %d in flight at estimate.prefill-rate %s/s, %.0f%% of the %s window; its record would count warmup requests whole (an edge bias): -d %s or longer, or a higher estimate.prefill-rate if the link is faster",
			c.Key, size, req.Round(time.Millisecond), inFlight, p.Campaign.Estimate.PrefillRate,
			100*req.Seconds()/win.Seconds(), win, lab.WindowFor(req)))
	}
	return out
}
