package plots

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"flag"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/plots/internal/fixture"
)

var (
	update = flag.Bool("update", false, "rewrite the golden files in testdata/")
	look   = flag.String("look", "", "also render the fixture campaign's charts and report into this directory, for eyes")
)

var (
	fixtureOnce sync.Once
	fixtureDir  string
	fixtureErr  error
)

// fixtureRun writes the fixture campaign once per test binary; tests that
// change it copy it first.
func fixtureRun(t *testing.T) string {
	t.Helper()
	fixtureOnce.Do(func() {
		fixtureDir, fixtureErr = os.MkdirTemp("", "plots-fixture-")
		if fixtureErr == nil {
			fixtureErr = fixture.Write(filepath.Join(fixtureDir, "fixture"))
		}
	})
	if fixtureErr != nil {
		t.Fatalf("fixture: %v", fixtureErr)
	}
	return filepath.Join(fixtureDir, "fixture")
}

func TestMain(m *testing.M) {
	flag.Parse()
	// No goroutine (the browser's pipe reader and waiter) outlives the tests;
	// the fixture goes after the check.
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if fixtureDir != "" {
			os.RemoveAll(fixtureDir)
		}
		os.Exit(code)
	}))
}

func load(t *testing.T, dir string) *Campaign {
	t.Helper()
	c, err := Load(dir)
	if err != nil {
		t.Fatalf("load %s: %v", dir, err)
	}
	return c
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test ./plots -update to create it)", err)
	}
	if string(want) != got {
		wl, gl := strings.Split(string(want), "\n"), strings.Split(got, "\n")
		for i := 0; i < len(wl) || i < len(gl); i++ {
			var w, g string
			if i < len(wl) {
				w = wl[i]
			}
			if i < len(gl) {
				g = gl[i]
			}
			if w != g {
				t.Fatalf("%s differs at line %d:\nwant: %s\ngot:  %s\n(run go test ./plots -update if the change is intended)", p, i+1, w, g)
			}
		}
	}
}

func TestTablesGolden(t *testing.T) {
	c := load(t, fixtureRun(t))
	var b bytes.Buffer
	if err := WriteMarkdown(&b, Tables(c)); err != nil {
		t.Fatal(err)
	}
	golden(t, "tables.md", b.String())
}

func TestChartsGolden(t *testing.T) {
	c := load(t, fixtureRun(t))
	var b strings.Builder
	cpu := 0
	for _, ch := range Charts(c) {
		// Every value-size and soak chart; two CPU charts stand for the rest.
		if ch.Kind == "cpu" {
			cpu++
			if ch.Name != "cpu-valkey-8.1.8-GET-8MB-r1" && ch.Name != "cpu-valkey-9.0.4-GET-1MB-r1" {
				continue
			}
		}
		b.WriteString(Describe(ch))
		b.WriteString("\n")
	}
	stored := 0
	for _, r := range c.Run.Cells {
		if r.Host != nil {
			stored++
		}
	}
	if cpu != stored {
		t.Errorf("%d CPU charts for %d cells with thread metrics", cpu, stored)
	}
	golden(t, "charts.txt", b.String())
}

// TestGapsMarked checks the fixture's planted gaps show where they are.
func TestGapsMarked(t *testing.T) {
	c := load(t, fixtureRun(t))
	byName := map[string]*Chart{}
	for _, ch := range Charts(c) {
		byName[ch.Name] = ch
	}
	count := func(ch *Chart, kind MarkKind, prefix string) int {
		n := 0
		for _, m := range ch.Marks {
			if m.Kind == kind && strings.HasPrefix(m.What, prefix) {
				n++
			}
		}
		return n
	}
	cases := []struct {
		chart  string
		kind   MarkKind
		prefix string
		want   int
	}{
		{"GET-gbps", MarkMissing, "valkey-9.1.0/", 6},
		{"GET-p99", MarkMissing, "valkey-9.1.0/", 6},
		{"SET-gbps", MarkFailed, "valkey-7.2.13/SET/64MB", 1},
		{"SET-p99", MarkFailed, "valkey-7.2.13/SET/64MB", 1},
		{"GET-gbps", MarkClientLimited, "valkey-9.0.4/GET/1MB", 1},
		{"SET-gbps", MarkMissing, "", 0}, // one repetition missing is not a gap
	}
	for _, tc := range cases {
		ch := byName[tc.chart]
		if ch == nil {
			t.Fatalf("no chart %s", tc.chart)
		}
		if got := count(ch, tc.kind, tc.prefix); got != tc.want {
			t.Errorf("%s: %d %s marks for %q, want %d\n%s", tc.chart, got, tc.kind, tc.prefix, tc.want, Describe(ch))
		}
	}
	// The failed cell is a gap in its line, and the line goes on around it.
	for _, l := range byName["SET-gbps"].Lines {
		if l.Label == "valkey-7.2.13" && !math.IsNaN(l.Points[5].Y) {
			t.Errorf("valkey-7.2.13 SET 64MB drawn at %v, want a gap", l.Points[5].Y)
		}
		// 8.1.8 SET 16MB lost its second repetition: a point, no band.
		if l.Label == "valkey-8.1.8" && (math.IsNaN(l.Points[4].Y) || !math.IsNaN(l.Band[4].Lo)) {
			t.Errorf("valkey-8.1.8 SET 16MB: point %v band %v, want a point without band", l.Points[4].Y, l.Band[4])
		}
	}
	if !byName["GET-p99"].YLog {
		t.Errorf("GET p99 spans 2 ms to 1 s but its axis is linear")
	}
}

// TestColoursStable: a version has one colour in every chart of a
// campaign, its index in the sorted version list.
func TestColoursStable(t *testing.T) {
	c := load(t, fixtureRun(t))
	want := map[string]int{"valkey-7.2.13": 0, "valkey-8.1.8": 1, "valkey-9.0.4": 2, "valkey-9.1.0": 3}
	for _, ch := range Charts(c) {
		for _, l := range ch.Lines {
			v := strings.Fields(l.Label)[0]
			if w, ok := want[v]; ok && l.Color != w {
				t.Errorf("%s: %s has colour %d, want %d", ch.Name, v, l.Color, w)
			}
		}
	}
}

func TestNaturalLess(t *testing.T) {
	sorted := []string{"redis-7.0.15", "redis-8.0.2", "valkey-7.2.13", "valkey-8.0.9", "valkey-8.1.8", "valkey-9.1.0", "valkey-10.0.0", "valkey@9.1"}
	for i := range sorted {
		for j := range sorted {
			if got := naturalLess(sorted[i], sorted[j]); got != (i < j) {
				t.Errorf("naturalLess(%s, %s) = %v", sorted[i], sorted[j], got)
			}
		}
	}
}

// TestFormats: the study's own spellings come out of our formatting.
func TestFormats(t *testing.T) {
	lat := []struct {
		ms   float64
		want string
	}{{2.2, "2.2 ms"}, {13, "13 ms"}, {8.7, "8.7 ms"}, {948, "948 ms"}, {1020, "1.02 s"}, {2580, "2.58 s"}, {0.45, "450 µs"}}
	for _, tc := range lat {
		if got := formatLatency(tc.ms); got != tc.want {
			t.Errorf("formatLatency(%v) = %q, want %q", tc.ms, got, tc.want)
		}
	}
	gb := []struct {
		v    float64
		want string
	}{{183.4, "183"}, {21.2, "21"}, {1.141, "1.1"}, {0.42, "0.42"}}
	for _, tc := range gb {
		if got := formatGbps(tc.v); got != tc.want {
			t.Errorf("formatGbps(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
	if got := sizeLabel(64e6); got != "64 MB" {
		t.Errorf("sizeLabel(64e6) = %q", got)
	}
	if got := sizeLabel(8 << 20); got != "8 MiB" {
		t.Errorf("sizeLabel(8MiB) = %q", got)
	}
}

var externalRef = regexp.MustCompile(`(?i)(?:href|src|xlink:href)\s*=\s*"([^"#][^"]*)"|url\(\s*['"]?([^'")]*)`)

// selfContained returns the references of a document that leave it.
func externalRefs(doc string) []string {
	var out []string
	for _, m := range externalRef.FindAllStringSubmatch(doc, -1) {
		ref := m[1] + m[2]
		if strings.HasPrefix(ref, "data:") || strings.HasPrefix(ref, "#") {
			continue
		}
		out = append(out, ref)
	}
	return out
}

// TestDrawFormats draws the headline charts as PNG and SVG: the PNG
// decodes at the chart's size; the SVG is well-formed XML, embeds its fonts
// and refers to nothing outside itself.
func TestDrawFormats(t *testing.T) {
	c := load(t, fixtureRun(t))
	for _, ch := range Charts(c) {
		if ch.Name != "GET-p99" && ch.Name != "SET-gbps" && ch.Kind != "soak" {
			continue
		}
		t.Run(ch.Name, func(t *testing.T) {
			b, err := Draw(ch, FormatPNG)
			if err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if w, h := int(ch.Width*PNGDPI+0.5), int(ch.Height*PNGDPI+0.5); img.Bounds().Dx() != w || img.Bounds().Dy() != h {
				t.Errorf("png %v, want %dx%d", img.Bounds(), w, h)
			}
			s, err := Draw(ch, FormatSVG)
			if err != nil {
				t.Fatal(err)
			}
			dec := xml.NewDecoder(bytes.NewReader(s))
			texts := 0
			for {
				tok, err := dec.Token()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("svg is not XML: %v", err)
				}
				if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "text" {
					texts++
				}
			}
			doc := string(s)
			if texts == 0 || !strings.Contains(doc, xmlEscape(ch.Title)) {
				t.Errorf("svg has %d text elements; title %q present: %v", texts, ch.Title, strings.Contains(doc, xmlEscape(ch.Title)))
			}
			if !strings.Contains(doc, "@font-face") || !strings.Contains(doc, "url(data:font/ttf") {
				t.Error("svg does not embed its fonts")
			}
			if refs := externalRefs(doc); len(refs) > 0 {
				t.Errorf("svg refers outside itself: %q", refs)
			}
		})
	}
	if _, err := Draw(&Chart{Name: "x", Width: 1, Height: 1}, "gif"); err == nil {
		t.Error("Draw accepted format gif")
	}
}

func xmlEscape(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// report is the fixture's HTML report, built once: drawing every chart
// takes seconds.
var (
	reportOnce sync.Once
	reportHTML []byte
	reportErr  error
)

func fixtureReport(t *testing.T) []byte {
	t.Helper()
	dir := fixtureRun(t)
	reportOnce.Do(func() {
		var b bytes.Buffer
		c, err := Load(dir)
		if err != nil {
			reportErr = err
			return
		}
		reportErr = WriteReport(&b, c, ReportOptions{Now: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)})
		reportHTML = b.Bytes()
		if *look != "" && reportErr == nil {
			os.MkdirAll(*look, 0o755)
			os.WriteFile(filepath.Join(*look, "report.html"), reportHTML, 0o644)
			_, reportErr = Render(c, Options{Out: filepath.Join(*look, "charts")})
		}
	})
	if reportErr != nil {
		t.Fatal(reportErr)
	}
	return reportHTML
}

func TestReportContents(t *testing.T) {
	html := string(fixtureReport(t))
	c := load(t, fixtureRun(t))
	if refs := externalRefs(html); len(refs) > 0 {
		t.Errorf("report refers outside itself: %q", refs)
	}
	imgs := regexp.MustCompile(`<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"`).FindAllStringSubmatch(html, -1)
	if want := len(Charts(c)); len(imgs) != want {
		t.Errorf("%d inline images, want one per chart (%d)", len(imgs), want)
	}
	for i, m := range imgs {
		b, err := base64.StdEncoding.DecodeString(m[1])
		if err == nil {
			_, err = png.Decode(bytes.NewReader(b))
		}
		if err != nil {
			t.Errorf("inline image %d: %v", i, err)
		}
	}
	for _, want := range []string{
		"<title>linerate report: fixture</title>",
		"valkey-7.2.13/SET/64MB/r1", "server lost: every connection reset", // failure with reason
		"Planned but not stored (13)", "valkey-9.1.0/GET/1MB/r1", "valkey-8.1.8/SET/16MB/r2", // gaps
		"bin/linerate sweep run " + filepath.Join(fixtureRun(t), "campaign.yaml"),
		"git checkout 0123456789abcdef",
		"bin/linerate bench -h $SERVER -p 6379 -c 32 -P 1 -n 500 --key-size 16 -s 8000000 -r 100:0", " --engine raw -t 16", // the campaign gives -t 16
		"<td class=\"num\">184 **</td>", // tables with marks
		"lab-server", "Neoverse-V2",
		"client-limited",
		"tuning profile study-c8gn", "Cells measured while the hosts had drifted", "irqbalance", // tuning and its drift
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// A soak record from before per-second p99 existed still gets a p99 chart:
// the whole soak's p99 against the campaign cell's, as bars.
func TestSoakP99WithoutPerSecondLatency(t *testing.T) {
	c := load(t, fixtureRun(t))
	if len(c.Soaks) == 0 {
		t.Fatal("the fixture has no soak")
	}
	old := *c.Soaks[0]
	res := *old.Result
	res.Ops = map[lab.Op]*lab.OpResult{}
	for op, o := range old.Result.Ops {
		cp := *o
		cp.Series = append([]lab.SecondSample(nil), o.Series...)
		for i := range cp.Series {
			cp.Series[i].P99 = 0
		}
		res.Ops[op] = &cp
	}
	old.Result = &res
	charts := soakCharts(c, &old)
	if len(charts) != 2 {
		t.Fatalf("%d soak charts", len(charts))
	}
	p99 := charts[1]
	if len(p99.Bars) != 2 || len(p99.Lines) != 0 || !strings.Contains(strings.Join(p99.Caption, " "), "no per-second latency") {
		t.Errorf("fallback p99 chart: %d bars, %d lines, caption %q", len(p99.Bars), len(p99.Lines), p99.Caption)
	}
	// The record with per-second p99 gets lines instead.
	if now := soakCharts(c, c.Soaks[0])[1]; len(now.Lines) == 0 || len(now.Refs) == 0 {
		t.Errorf("per-second p99 chart: %d lines, %d refs", len(now.Lines), len(now.Refs))
	}
}
