package plots

import (
	"bytes"
	"html"
	"strings"
	"testing"

	"github.com/linerate/linerate/lab"
)

// The report lists every cell whose requests were too long for its window
// (issue 25): the cell, the op and latency that passed a tenth of the
// window, and the -d that would fix it; a cell within bounds is not
// listed.
func TestReportNamesEdgeBiasedCells(t *testing.T) {
	c := load(t, fixtureRun(t))
	// The fixture's cells are all within bounds: the first done one gets
	// requests of 30 % of its window.
	for _, r := range c.Run.Sorted() {
		if r.Result != nil && r.Result.Window.Measured > 0 {
			for _, o := range r.Result.Ops {
				o.Latency.P99 = 0.3 * float64(r.Result.Window.Measured.D().Microseconds())
				o.Latency.Max = max(o.Latency.Max, o.Latency.P99)
			}
			break
		}
	}
	var biased, fine []string
	for _, r := range c.Run.Sorted() {
		if r.Result == nil || len(r.Result.Ops) == 0 {
			continue
		}
		if es := lab.EdgeBiasOf(r.Result); len(es) > 0 {
			biased = append(biased, r.CellID+"</td><td>"+html.EscapeString(es[0].Note()))
		} else {
			fine = append(fine, r.CellID+"</td><td>")
		}
	}
	if len(biased) == 0 || len(fine) == 0 {
		t.Fatalf("the fixture has %d edge-biased cells and %d others; the test needs both", len(biased), len(fine))
	}
	var b bytes.Buffer
	if err := WriteReport(&b, c, ReportOptions{Kinds: []string{"size"}}); err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(b.String(), "too long for their window")
	section, _, _ = strings.Cut(section, "</table>")
	for _, want := range biased {
		if !strings.Contains(section, want) {
			t.Errorf("the report's edge-bias list lacks %q", want)
		}
	}
	for _, not := range fine {
		if strings.Contains(section, not) {
			t.Errorf("the report lists %q, within its window, as edge-biased", not)
		}
	}
}
