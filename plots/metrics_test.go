package plots

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/linerate/linerate/sweeps"
)

func chartsByName(c *Campaign) map[string]*Chart {
	out := map[string]*Chart{}
	for _, ch := range Charts(c) {
		out[ch.Name] = ch
	}
	return out
}

// editCell rewrites one stored cell record.
func editCell(t *testing.T, dir, id string, edit func(*sweeps.CellRecord)) {
	t.Helper()
	p := filepath.Join(dir, sweeps.CellsDir, sweeps.CellFileName(id))
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var r sweeps.CellRecord
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	edit(&r)
	if b, err = json.Marshal(&r); err != nil {
		t.Fatal(err)
	}
	write(t, p, string(b))
}

// A cell stored without server thread metrics is a gap in the CPU-per-GB
// chart and a dash in its table, not a zero; with none at all the chart
// and table are left out.
func TestServerCPUPerGBGaps(t *testing.T) {
	dir := copyRun(t, fixtureRun(t))
	for _, id := range []string{"valkey-9.1.0/SET/8MB/r1", "valkey-9.1.0/SET/8MB/r2"} {
		editCell(t, dir, id, func(r *sweeps.CellRecord) { r.Host = nil })
	}
	c := load(t, dir)
	byName := chartsByName(c)
	cpu := byName["SET-server-cpu-per-gb"]
	if cpu == nil {
		t.Fatal("no SET-server-cpu-per-gb chart")
	}
	var marked bool
	for _, m := range cpu.Marks {
		marked = marked || (m.Kind == MarkMissing && m.What == "valkey-9.1.0/SET/8MB")
	}
	for _, l := range cpu.Lines {
		if l.Label == "valkey-9.1.0" && !math.IsNaN(l.Points[3].Y) {
			t.Errorf("9.1.0 SET 8MB drawn at %v without host metrics", l.Points[3].Y)
		}
	}
	if !marked {
		t.Errorf("no not-measured mark for 9.1.0 SET 8MB:\n%s", Describe(cpu))
	}
	for _, m := range byName["SET-gbps"].Marks {
		if strings.HasPrefix(m.What, "valkey-9.1.0/SET/8MB") {
			t.Errorf("the Gbps chart marks a cell that has Gbps: %+v", m)
		}
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, Tables(c)); err != nil {
		t.Fatal(err)
	}
	table := md.String()[strings.Index(md.String(), "SET: server CPU per GB moved"):]
	if !strings.Contains(table, "| 8 MB | 2.8 | 0.46 ** | 0.44 ** | – |") {
		t.Errorf("SET CPU table:\n%s", table[:min(len(table), 600)])
	}

	// No host metrics anywhere: neither the chart nor the table.
	for id := range c.Run.Cells {
		editCell(t, dir, id, func(r *sweeps.CellRecord) { r.Host = nil })
	}
	c = load(t, dir)
	for name := range chartsByName(c) {
		if strings.HasSuffix(name, "server-cpu-per-gb") {
			t.Errorf("%s drawn without any host metrics", name)
		}
	}
	md.Reset()
	if err := WriteMarkdown(&md, Tables(c)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(md.String(), "server CPU per GB") {
		t.Error("a CPU-per-GB table without any host metrics")
	}
}

// p95 is there for the asking: a chart and a table read from the stored
// histograms of the committed sample. The list reads as bench's
// --percentiles does (lab.ParsePercentiles): 95 and p95 alike, any
// percentile up to p100, none twice.
func TestPercentilesOption(t *testing.T) {
	c, err := Load("../runs/sample-local")
	if err != nil {
		t.Fatal(err)
	}
	c.Percentiles, err = ParsePercentiles("95, p99.9,p99.99")
	if err != nil || strings.Join(c.Percentiles, " ") != "p95 p99.9 p99.99" {
		t.Fatalf("parse: %v %v", c.Percentiles, err)
	}
	byName := chartsByName(c)
	if byName["GET-p99"] != nil || byName["GET-p95"] == nil || byName["SET-p99.9"] == nil || byName["GET-p99.99"] == nil {
		t.Fatalf("charts %v", keys(byName))
	}
	rec := c.Run.Cells["valkey-9.1.2/GET/64MiB/r1"]
	want, err := rec.Result.Ops["GET"].Latency.ValueAt(95)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range byName["GET-p95"].Lines {
		if l.Label == "valkey-9.1.2" && l.Points[3].Y != want/1000 {
			t.Errorf("GET-p95 at 64 MiB: %v ms, the histogram says %v us", l.Points[3].Y, want)
		}
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, Tables(c)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "GET: latency, p95") || strings.Contains(md.String(), "latency, p99\n") {
		t.Errorf("tables:\n%s", md.String())
	}
	for _, bad := range []string{"", " , ", "p101", "p95,95", "fast"} {
		if _, err := ParsePercentiles(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func keys(m map[string]*Chart) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// The hook for the link's ceiling: every Gbps chart draws it and makes room
// for it; other charts do not.
func TestLinkReference(t *testing.T) {
	c := load(t, fixtureRun(t))
	c.LinkGbps = 250
	for name, ch := range chartsByName(c) {
		has := len(ch.Refs) == 1 && ch.Refs[0].Y == 250 && strings.Contains(ch.Refs[0].Label, "link")
		switch {
		case strings.HasSuffix(name, "-gbps") && ch.Kind == "size":
			if !has || ch.YMax < 250 {
				t.Errorf("%s: refs %+v, y up to %v", name, ch.Refs, ch.YMax)
			}
		case has:
			t.Errorf("%s draws the link ceiling", name)
		}
	}
	if _, err := Draw(chartsByName(c)["GET-gbps"], FormatSVG); err != nil {
		t.Fatal(err)
	}
}

// Memory per key: when cells carry it (a campaign's runner reads INFO
// memory around the prefill), each group gets a chart with a line per
// version of the bytes a key took over its value size, and a table of the
// same; a run without it gets neither.
func TestMemoryPerKeyChartAndTable(t *testing.T) {
	dir := copyRun(t, fixtureRun(t))
	c := load(t, dir)
	for id, r := range c.Run.Cells {
		if r.Result == nil {
			continue
		}
		over := 0.037 // valkey 9.1 measured 3.7 % at 1 MiB here
		if r.Version.Segment == "valkey-7.2.13" {
			over = 0.25 // a quarter: jemalloc's next size class
		}
		size := r.Workload.ValueSz.Mean()
		editCell(t, dir, id, func(r *sweeps.CellRecord) {
			r.Memory = &sweeps.MemoryRecord{BytesPerKey: size * (1 + over), Overhead: over, BytesPerKeyFrom: "prefill"}
		})
	}
	c = load(t, dir)
	byName := chartsByName(c)
	ch := byName["SET-memory-overhead"]
	if ch == nil {
		t.Fatalf("no SET-memory-overhead chart in %v", keys(byName))
	}
	lines := map[string]float64{}
	for _, l := range ch.Lines {
		lines[l.Label] = l.Points[0].Y
	}
	if len(lines) != 4 || lines["valkey-7.2.13"] != 25 || math.Abs(lines["valkey-9.1.0"]-3.7) > 1e-9 {
		t.Errorf("memory chart lines at the first size: %v\n%s", lines, Describe(ch))
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, Tables(c)); err != nil {
		t.Fatal(err)
	}
	i := strings.Index(md.String(), "SET: memory per key over the value size, %")
	if i < 0 {
		t.Fatalf("no SET memory table:\n%s", md.String())
	}
	if table := md.String()[i:]; !strings.Contains(table, "| 1 MB | 25 | 3.7") {
		t.Errorf("SET memory table:\n%s", table[:min(len(table), 600)])
	}
	// Without memory figures: neither.
	for id := range c.Run.Cells {
		editCell(t, dir, id, func(r *sweeps.CellRecord) { r.Memory = nil })
	}
	c = load(t, dir)
	for name := range chartsByName(c) {
		if strings.HasSuffix(name, "memory-overhead") {
			t.Errorf("%s drawn without any memory figure", name)
		}
	}
}
