// Package benchtable is `make bench`, the one place linerate's speed is
// judged. Each benchmark runs linerate (A) beside a reference (B) on the
// same machine and cells, the pair alternated A B, B A, A B over rounds,
// and files rows into one table: what is compared, the medians of A and
// B, A/B, the goal, MET or MISSED. After the benchmarks TestMain prints
// the table on stdout and writes the same rows, with every round's
// figures, as JSON to $BENCH_OUT, so two commits can be compared.
//
// Nothing here asserts a speed: these machines are shared and noisy, and
// a MISSED row is the number to improve, not a failure; only a broken
// harness fails. Without -bench (go test ./...) nothing but the table's
// own unit tests runs.
//
// The package sits at the top of sweeps, tests only: the link row runs
// sweeps/calibrate on an infra/netns pair, which nothing under lab/ may
// import.
package benchtable

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/linerate/linerate/infra/kernel"
	"github.com/linerate/linerate/sweeps/stats"
)

// rounds is how many rounds every pair runs: A B, then B A, then A B.
const rounds = 3

// inOrder runs one round of a pair: a then b in even rounds, b then a in
// odd ones, so a drift of the machine over minutes favours neither side.
func inOrder(round int, a, b func()) {
	if round%2 == 0 {
		a()
		b()
	} else {
		b()
		a()
	}
}

// alternate runs n rounds of a pair in alternating order.
func alternate(n int, a, b func()) {
	for r := range n {
		inOrder(r, a, b)
	}
}

// figure is one number of a row. NaN is "none" (a round that failed, a
// row without a reference); +Inf is kept (a reference that moved no byte
// spent infinite CPU per GB). JSON has neither: there they are null and
// the row's note says why.
type figure float64

func (f figure) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(v)
}

func figures(xs []float64) []figure {
	out := make([]figure, len(xs))
	for i, x := range xs {
		out[i] = figure(x)
	}
	return out
}

// goal is "A op K×B + C": K alone is a ratio goal (A/B >= 1.0x), C alone
// an absolute one (A <= 0.01, B then only shown beside it), both a bound
// that follows the reference with a margin (late share <= 2x the
// machine's own + 1 point).
type goal struct {
	AtMost bool    // <=; else >=
	K, C   float64 // times B, plus
}

func atLeastX(k float64) goal { return goal{K: k} }
func atMostX(k float64) goal  { return goal{AtMost: true, K: k} }
func atMost(c float64) goal   { return goal{AtMost: true, C: c} }

// met judges medians a and b.
func (g goal) met(a, b float64) bool {
	bound := g.C
	if g.K != 0 {
		bound += g.K * b
	}
	if g.AtMost {
		return a <= bound
	}
	return a >= bound
}

// text is the goal as the table prints it; unit is A's.
func (g goal) text(unit string) string {
	op := ">="
	if g.AtMost {
		op = "<="
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	switch {
	case g.K != 0 && g.C == 0:
		k := num(g.K)
		if g.K == math.Trunc(g.K) {
			k = strconv.FormatFloat(g.K, 'f', 1, 64) // 1.0x, not 1x
		}
		return fmt.Sprintf("%s %sx", op, k)
	case g.K == 0:
		return strings.TrimSpace(fmt.Sprintf("%s %s %s", op, num(g.C), unit))
	default:
		return fmt.Sprintf("%s %sx + %s %s", op, num(g.K), num(g.C), unit)
	}
}

// Row statuses.
const (
	statusMet         = "MET"
	statusMissed      = "MISSED"
	statusNotMeasured = "not measured"
)

// row is one line of the table and one object of the JSON.
type row struct {
	Section string   `json:"section"`
	Name    string   `json:"name"`
	A       figure   `json:"a"`
	UnitA   string   `json:"unit_a"`
	B       figure   `json:"b"`
	UnitB   string   `json:"unit_b"`
	Ratio   figure   `json:"ratio"` // A/B; null when B is none, zero or infinite
	Goal    string   `json:"goal"`
	Met     *bool    `json:"met"` // null: not measured
	Status  string   `json:"status"`
	Rounds  int      `json:"rounds"`
	Note    string   `json:"note,omitempty"`
	RawA    []figure `json:"raw_a"`
	RawB    []figure `json:"raw_b,omitempty"`
	// RawMore are other per-round figures behind the row (a probe's band,
	// requests late), by name.
	RawMore map[string][]figure `json:"raw_more,omitempty"`
	goal    goal
}

// median is the median of the finite-or-infinite figures, NaN when every
// round failed.
func median(xs []float64) float64 {
	return stats.Median(slices.DeleteFunc(slices.Clone(xs), math.IsNaN))
}

// compare makes a row of per-round figures: the medians of A and of B
// (rawB nil for a row judged on A alone) and the goal judged on them.
// runNotes are what the rounds' runs said ("" for nothing), each kept once
// with how many rounds said it. A row none of whose A rounds (or, with a
// reference, B rounds) gave a figure is not measured, and its note says
// why.
func compare(name, unitA, unitB string, rawA, rawB []float64, g goal, runNotes ...string) row {
	r := row{Name: name, UnitA: unitA, UnitB: unitB, goal: g, Goal: g.text(unitA), Rounds: max(len(rawA), len(rawB)),
		RawA: figures(rawA), RawB: figures(rawB)}
	var said []string
	for _, n := range dedupe(runNotes) {
		k := 0
		for _, m := range runNotes {
			if m == n {
				k++
			}
		}
		if r.Rounds > 1 {
			n = fmt.Sprintf("%s (%d of %d rounds)", n, k, r.Rounds)
		}
		said = append(said, n)
	}
	r.Note = strings.Join(said, "; ")
	a, b := median(rawA), median(rawB)
	r.A, r.B, r.Ratio = figure(a), figure(b), figure(math.NaN())
	if g.K != 0 && b != 0 && !math.IsInf(b, 0) && !math.IsNaN(b) {
		r.Ratio = figure(a / b)
	}
	if math.IsNaN(a) || (rawB != nil && g.K != 0 && math.IsNaN(b)) {
		r.Status = statusNotMeasured
		if r.Note == "" {
			r.Note = "no round gave a figure"
		}
		return r
	}
	// A ratio of nothing to nothing judges nothing: 0 >= 1.5 x 0 would
	// read MET.
	if g.K != 0 && a == 0 && b == 0 {
		r.Status = statusNotMeasured
		r.Note = strings.Join(dedupe([]string{"neither side moved anything", r.Note}), "; ")
		return r
	}
	m := g.met(a, b)
	r.Met = &m
	r.Status = statusMissed
	if m {
		r.Status = statusMet
	}
	return r
}

// with puts a note about the row as a whole before what its runs said.
func (r row) with(note string) row {
	r.Note = strings.Join(dedupe([]string{note, r.Note}), "; ")
	return r
}

// notMeasured is a row that could not be measured, and why.
func notMeasured(name, why string) row {
	nan := figure(math.NaN())
	return row{Name: name, A: nan, B: nan, Ratio: nan, Goal: "-", Status: statusNotMeasured, Note: "not measured: " + why}
}

func dedupe(s []string) []string {
	var out []string
	for _, x := range s {
		if x != "" && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// section is what one part of the table compares and on what: it heads
// its rows in the JSON and in the notes under the table.
type section struct {
	Key   string `json:"key"`
	Where string `json:"where"`
}

// The sections, in the table's order.
const (
	secPeer     = "peer"
	secTLS      = "tls"
	secCeiling  = "ceiling"
	secWakeups  = "wakeups"
	secLink     = "link"
	secPaced    = "paced"
	secOpenLoop = "openloop"
	secProbe    = "probe"
)

var sectionOrder = []string{secPeer, secTLS, secCeiling, secWakeups, secLink, secPaced, secOpenLoop, secProbe}

// table collects the rows the benchmarks file.
type table struct {
	mu       sync.Mutex
	rows     []row
	sections map[string]string // key → where
	progress io.Writer
}

var results = &table{sections: map[string]string{}, progress: os.Stderr}

// where records how a section measures (server, flags, windows).
func (t *table) where(key, text string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sections[key] = text
}

// add files rows of a section and prints a progress line for each.
func (t *table) add(key string, rs ...row) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range rs {
		r.Section = key
		t.rows = append(t.rows, r)
		fmt.Fprintf(t.progress, "bench: %s: %s vs %s: %s%s\n", r.Name, cell(r.A, r.UnitA), cell(r.B, r.UnitB), r.Status, noteSuffix(r.Note))
	}
}

func noteSuffix(n string) string {
	if n == "" {
		return ""
	}
	return " (" + n + ")"
}

// guard files a "not measured" row for a section whose benchmark stopped
// before filing any of its rows (a broken harness), once it has ended.
func (t *table) guard(b *testing.B, key, what string) {
	b.Cleanup(func() {
		t.mu.Lock()
		filed := slices.ContainsFunc(t.rows, func(r row) bool { return r.Section == key })
		t.mu.Unlock()
		if !filed && (b.Failed() || b.Skipped()) {
			t.add(key, notMeasured(what, "the benchmark stopped: see its log above"))
		}
	})
}

// sorted is the rows by section, in filing order within one.
func (t *table) sorted() []row {
	rs := slices.Clone(t.rows)
	slices.SortStableFunc(rs, func(a, b row) int {
		return slices.Index(sectionOrder, a.Section) - slices.Index(sectionOrder, b.Section)
	})
	return rs
}

// precision is how many decimals a unit's figures print with.
func precision(unit string) int {
	switch unit {
	case "Gbps", "%":
		return 2
	case "requests", "µs":
		return 0
	}
	return 3
}

// cell is a figure with its unit, "-" for none.
func cell(f figure, unit string) string {
	v := float64(f)
	switch {
	case math.IsNaN(v):
		return "-"
	case math.IsInf(v, 1):
		return "inf " + unit
	}
	return strings.TrimSpace(strconv.FormatFloat(v, 'f', precision(unit), 64) + " " + unit)
}

func ratioCell(r row) string {
	switch {
	case r.goal.K == 0: // an absolute goal: A alone is judged
		return "-"
	case !math.IsNaN(float64(r.Ratio)):
		return strconv.FormatFloat(float64(r.Ratio), 'f', 2, 64) + "x"
	case float64(r.B) == 0 && float64(r.A) > 0:
		return "inf"
	case math.IsInf(float64(r.B), 1):
		return "0.00x"
	}
	return "-"
}

// runFacts are what the table and the JSON say of the run as a whole.
type runFacts struct {
	host               string
	start              time.Time
	loadStart, loadEnd string // /proc/loadavg's 1-minute figure
	// The checkout's commit when the run started: what was built and
	// measured, whatever the checkout moved to during the run.
	commit string
	dirty  bool
}

// loadAverage is the 1-minute load average: on a shared machine, how busy
// it was besides the bench.
func loadAverage() string {
	b, _ := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "?"
}

// write prints the table: a header line, the rows, the sections' notes.
func (t *table) write(w io.Writer, f runFacts) {
	rs := t.sorted()
	head := []string{"#", "row", "linerate (A)", "reference (B)", "A/B", "goal", "result", "n", "note"}
	lines := [][]string{head}
	for i, r := range rs {
		lines = append(lines, []string{strconv.Itoa(i + 1), r.Name, cell(r.A, r.UnitA), cell(r.B, r.UnitB), ratioCell(r),
			r.Goal, r.Status, strconv.Itoa(r.Rounds), r.Note})
	}
	width := make([]int, len(head))
	for _, l := range lines {
		for i, c := range l {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	fmt.Fprintf(w, "\nmake bench: medians of %d rounds per row (n), each pair alternated A B, B A, A B; %s; load average %s at the start, %s at the end\n",
		rounds, f.host, f.loadStart, f.loadEnd)
	for li, l := range lines {
		var b strings.Builder
		for i, c := range l {
			if i == len(l)-1 {
				b.WriteString(c)
				break
			}
			pad := width[i] - len([]rune(c))
			if i == 0 || (i >= 2 && i <= 4) { // numbers right-aligned
				b.WriteString(strings.Repeat(" ", pad) + c)
			} else {
				b.WriteString(c + strings.Repeat(" ", pad))
			}
			b.WriteString("  ")
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
		if li == 0 {
			fmt.Fprintln(w, strings.Repeat("-", len([]rune(strings.TrimRight(b.String(), " ")))))
		}
	}
	met, missed, none := 0, 0, 0
	for _, r := range rs {
		switch r.Status {
		case statusMet:
			met++
		case statusMissed:
			missed++
		default:
			none++
		}
	}
	fmt.Fprintf(w, "%d MET, %d MISSED, %d not measured. A MISSED row fails nothing: it is the number to improve.\n", met, missed, none)
	for _, k := range sectionOrder {
		if s, ok := t.sections[k]; ok {
			fmt.Fprintf(w, "  %s: %s\n", k, s)
		}
	}
}

// report is the JSON file.
type report struct {
	Date      time.Time `json:"date"`
	Commit    string    `json:"commit,omitempty"`
	Dirty     bool      `json:"dirty,omitempty"`
	Host      string    `json:"host"`
	LoadStart string    `json:"load_average_start"`
	LoadEnd   string    `json:"load_average_end"`
	Go        string    `json:"go"`
	Rounds    int       `json:"rounds"`
	Seconds   float64   `json:"seconds"`
	Sections  []section `json:"sections"`
	Rows      []row     `json:"rows"`
}

func (t *table) report(f runFacts) report {
	r := report{Date: f.start.UTC().Truncate(time.Second), Host: f.host, LoadStart: f.loadStart, LoadEnd: f.loadEnd,
		Go: runtime.Version(), Rounds: rounds, Seconds: math.Round(time.Since(f.start).Seconds()), Rows: t.sorted()}
	r.Commit, r.Dirty = f.commit, f.dirty
	for _, k := range sectionOrder {
		if s, ok := t.sections[k]; ok {
			r.Sections = append(r.Sections, section{Key: k, Where: s})
		}
	}
	return r
}

// commit is `git rev-parse HEAD` of the checkout this runs in and whether
// it has changes; "" where git cannot say.
func commit() (string, bool) {
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "", false
	}
	st, _ := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output()
	return strings.TrimSpace(string(out)), len(strings.TrimSpace(string(st))) > 0
}

// hostLine is "CPU model x N CPUs, kernel K".
func hostLine() string {
	k := kernel.FS{Root: "/"}
	ci, err := k.CPUInfo()
	if err != nil {
		ci.Model, ci.CPUs = "unknown CPU", runtime.NumCPU()
	}
	rel, _ := k.KernelRelease()
	return fmt.Sprintf("%s x %d CPUs, kernel %s", ci.Model, ci.CPUs, rel)
}

// writeJSON writes the report to path, making its directory.
func writeJSON(path string, r report) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// TestMain runs the benchmarks with the testing package's lines on
// stderr beside the progress lines, so stdout holds the table alone, and
// prints the table and writes $BENCH_OUT when any row was filed. A
// benchmark that leaves a goroutine behind (a server's reader, a peer)
// fails the run, as a test would (goleak).
func TestMain(m *testing.M) {
	stdout := os.Stdout
	os.Stdout = os.Stderr
	f := runFacts{start: time.Now(), loadStart: loadAverage()}
	f.commit, f.dirty = commit()
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.Stdout = stdout
		os.Exit(finish(code, f))
	}))
}

// finish prints the table and writes $BENCH_OUT after the benchmarks
// ended with code; it returns the exit code.
func finish(code int, f runFacts) int {
	if len(results.rows) == 0 {
		return code
	}
	f.host, f.loadEnd = hostLine(), loadAverage()
	results.write(os.Stdout, f)
	if out := os.Getenv("BENCH_OUT"); out != "" {
		if err := writeJSON(out, results.report(f)); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
			code = max(code, 1)
		} else {
			fmt.Fprintf(os.Stderr, "bench: rows written to %s\n", out)
		}
	}
	fmt.Fprintf(os.Stderr, "bench: %s in all\n", time.Since(f.start).Round(time.Second))
	return code
}
