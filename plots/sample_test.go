package plots

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// The committed sample campaign (runs/sample-local, measured on this kind of
// machine) loads whole and renders: tables with every version, the
// value-size charts, and a report with them inline.
func TestCommittedSample(t *testing.T) {
	c, err := Load("../runs/sample-local")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Problems) != 0 {
		t.Errorf("problems reading the sample: %v", c.Problems)
	}
	if n := len(c.Run.Cells); n != 40 {
		t.Fatalf("%d cells, want 40", n)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, Tables(c)); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"valkey-8.0.1", "valkey-8.1.1", "valkey-9.1.2", "redis-7.0.15", "redis-8.0.6", "| 64 MiB |"} {
		if !strings.Contains(md.String(), v) {
			t.Errorf("tables lack %q", v)
		}
	}
	w, err := Render(c, Options{Out: t.TempDir(), Formats: []string{"png"}, Kinds: []string{"size"}})
	if err != nil {
		t.Fatal(err)
	}
	// GET and SET: Gbps, p99, p99.9 and server CPU per GB; and tables.md.
	if len(w.Charts) != 8 || len(w.Files) != 9 {
		t.Errorf("wrote %d charts, files %v", len(w.Charts), w.Files)
	}
	for _, ch := range w.Charts {
		for _, l := range ch.Lines {
			if n := len(l.Points); n != 4 || math.IsNaN(l.Points[0].Y) || math.IsNaN(l.Points[n-1].Y) {
				t.Errorf("%s: %s has points %v, want 1 to 64 MiB measured", ch.Name, l.Label, l.Points)
			}
		}
	}
	for _, v := range []string{"GET: latency, p99.9", "SET: server CPU per GB moved"} {
		if !strings.Contains(md.String(), v) {
			t.Errorf("tables lack %q", v)
		}
	}
	var html bytes.Buffer
	if err := WriteReport(&html, c, ReportOptions{Kinds: []string{"size"}}); err != nil {
		t.Fatal(err)
	}
	if strings.Count(html.String(), "<img") < 8 {
		t.Errorf("report has %d images", strings.Count(html.String(), "<img"))
	}
}
