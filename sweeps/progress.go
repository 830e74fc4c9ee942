package sweeps

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/report"
)

// Progress hears about a run as it goes.
type Progress interface {
	Begin(cells int, estimate time.Duration)
	CellStart(c Cell)
	CellEnd(c Cell, rec *CellRecord)
	End(s *Summary)
}

// IsTerminal says whether f is a terminal: one that answers a terminal's
// ioctl, not any character device (/dev/null is one, and is no terminal).
func IsTerminal(f *os.File) bool {
	return term.IsTerminal(int(f.Fd()))
}

// NewProgress returns a bar with ETA redrawn in place on a terminal, and one
// plain line per cell otherwise (logs, CI).
func NewProgress(w io.Writer, terminal bool) Progress {
	return &lineProgress{w: w, bar: terminal, now: time.Now}
}

type lineProgress struct {
	w        io.Writer
	bar      bool
	now      func() time.Time
	total    int
	n        int
	failed   int
	estimate time.Duration // for the cells still to run, at Begin
	estDone  time.Duration // estimates of the cells finished
	start    time.Time
	// first is when the first cell started; before it the run calibrated
	// the link (part of the estimate, done by then, and no sign of how
	// fast cells go).
	first time.Time
	pre   time.Duration
}

func (p *lineProgress) Begin(cells int, estimate time.Duration) {
	p.total, p.estimate, p.start = cells, estimate, p.now()
	fmt.Fprintf(p.w, "sweep: %d cells to run, estimated %s\n", cells, estimate.Round(time.Second))
}

func (p *lineProgress) CellStart(c Cell) {
	if p.first.IsZero() {
		p.first = p.now()
		p.pre = p.first.Sub(p.start)
	}
	if p.bar {
		fmt.Fprintf(p.w, "\r\033[K%s %s", p.barText(), c.ID)
	}
}

// eta scales the estimate left by how fast the cells have gone so far
// against their estimates, so a slow host corrects the ETA as cells
// finish. The time before the first cell (calibration) is taken off the
// estimate as it really went; nothing is left once every cell is done.
func (p *lineProgress) eta() time.Duration {
	if p.total > 0 && p.n >= p.total {
		return 0
	}
	left := max(p.estimate-p.pre-p.estDone, 0)
	if p.estDone > 0 && !p.first.IsZero() {
		left = time.Duration(float64(left) * float64(p.now().Sub(p.first)) / float64(p.estDone))
	}
	return left.Round(time.Second)
}

func (p *lineProgress) barText() string {
	const width = 24
	fill := 0
	if p.total > 0 {
		fill = p.n * width / p.total
	}
	return fmt.Sprintf("[%s%s] %d/%d ETA %s", strings.Repeat("#", fill), strings.Repeat(".", width-fill), p.n, p.total, p.eta())
}

func (p *lineProgress) CellEnd(c Cell, rec *CellRecord) {
	p.n++
	p.estDone += c.Estimate
	status := cellSummary(rec)
	if rec.Status == StatusFailed {
		p.failed++
	}
	if p.bar {
		fmt.Fprintf(p.w, "\r\033[K%s %s\n", c.ID, status)
		fmt.Fprintf(p.w, "%s", p.barText())
		return
	}
	fmt.Fprintf(p.w, "sweep: %d/%d %s %s (eta %s)\n", p.n, p.total, c.ID, status, p.eta())
}

// cellSummary is a cell's outcome in a few words: figure, limit, failure.
func cellSummary(rec *CellRecord) string {
	if rec.Status == StatusFailed {
		return "FAILED: " + rec.Reason
	}
	var parts []string
	if rec.Result != nil {
		for _, op := range []string{"GET", "SET"} {
			if o := rec.Result.Ops[lab.Op(op)]; o != nil {
				parts = append(parts, fmt.Sprintf("%s %.2f Gbps p99 %s", op, o.Gbps, report.FormatUs(o.Latency.P99)))
			}
		}
		// The headline compare and the charts use, where it is not one
		// op's figures already.
		if len(rec.Result.Ops) > 1 {
			gbps, _ := CellFigure(rec, MetricGbps)
			total := fmt.Sprintf("total %.2f Gbps", gbps)
			if ms, ok := CellFigure(rec, MetricP99); ok {
				total += " worst p99 " + report.FormatUs(ms*1000)
			}
			parts = append(parts, total)
		}
	}
	if rec.Limit != nil {
		parts = append(parts, "limit "+string(rec.Limit.Kind))
	}
	if rec.ClientLimited {
		parts = append(parts, "CLIENT-LIMITED")
	}
	return strings.Join(parts, ", ")
}

func (p *lineProgress) End(s *Summary) {
	if p.bar {
		fmt.Fprintf(p.w, "\r\033[K")
	}
	fmt.Fprint(p.w, SummaryText(s))
}

// SummaryText renders a run summary, failures and client-limited cells
// listed one per line.
func SummaryText(s *Summary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "sweep: %d/%d cells done (%d kept from earlier runs, %d run now, %d failed) in %s\n",
		s.Done, s.Planned, s.Kept, s.Ran, len(s.Failed), s.Elapsed.Round(time.Second))
	if s.Stale > 0 {
		fmt.Fprintf(&b, "sweep: %d stored cells were for a different spec and were run again\n", s.Stale)
	}
	if s.Interrupted {
		fmt.Fprintf(&b, "sweep: interrupted; run the same command again to resume\n")
	}
	for _, f := range s.Failed {
		fmt.Fprintf(&b, "  failed %s (attempt %d): %s\n", f.CellID, f.Attempts, f.Reason)
	}
	if s.GivenUp > 0 {
		fmt.Fprintf(&b, "sweep: %d cells failed too often and were not retried; --redo runs them again\n", s.GivenUp)
	}
	for _, id := range s.ClientLimited {
		fmt.Fprintf(&b, "  client-limited %s: the client ran out first; not the server's figure\n", id)
	}
	for _, sh := range s.Shaped {
		fmt.Fprintf(&b, "  link-allowance %s: the NIC counted the cloud's allowance exceeded (%s); the allowance's figure, not the server's\n", sh.CellID, sh.Counters)
	}
	return b.String()
}
