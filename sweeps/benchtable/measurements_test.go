package benchtable

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// docs/measurements.md quotes linerate's measured figures only as rows of
// a committed `make bench` run: its Figures section is rendered from the
// newest JSON in docs/measurements/ (a copy of bench/results.json, named
// by the run's date), and this test fails when the two differ.

var update = flag.Bool("update", false, "rewrite docs/measurements.md's Figures from the newest docs/measurements/*.json")

const (
	measurementsDoc = "../../docs/measurements.md"
	measurementsDir = "../../docs/measurements"
	figuresBegin    = "<!-- begin: figures of docs/measurements/*.json (go test ./sweeps/benchtable -run TestMeasurementsFigures -update) -->\n"
	figuresEnd      = "<!-- end: figures -->"
)

// committedRun is what the Figures render of a results.json: its null
// figures (none measured) stay nil.
type committedRun struct {
	Date      time.Time `json:"date"`
	Commit    string    `json:"commit"`
	Dirty     bool      `json:"dirty"`
	Host      string    `json:"host"`
	LoadStart string    `json:"load_average_start"`
	LoadEnd   string    `json:"load_average_end"`
	Rounds    int       `json:"rounds"`
	Sections  []section `json:"sections"`
	Rows      []struct {
		Section string   `json:"section"`
		Name    string   `json:"name"`
		A       *float64 `json:"a"`
		UnitA   string   `json:"unit_a"`
		B       *float64 `json:"b"`
		UnitB   string   `json:"unit_b"`
		Ratio   *float64 `json:"ratio"`
		Goal    string   `json:"goal"`
		Status  string   `json:"status"`
		Note    string   `json:"note"`
	} `json:"rows"`
}

// newestRun reads the newest committed run: the last of dir's JSON files
// by name (YYYY-MM-DD.json), and its name.
func newestRun(dir string) (committedRun, string, error) {
	var run committedRun
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		return run, "", fmt.Errorf("%s: no committed make bench run (*.json): %v", dir, err)
	}
	slices.Sort(files)
	path := files[len(files)-1]
	b, err := os.ReadFile(path)
	if err != nil {
		return run, "", err
	}
	if err := json.Unmarshal(b, &run); err != nil {
		return run, "", fmt.Errorf("%s: %w", path, err)
	}
	if run.Date.IsZero() || run.Host == "" || len(run.Rows) == 0 {
		return run, "", fmt.Errorf("%s: no date, host or rows: is it a make bench results.json?", path)
	}
	return run, filepath.Base(path), nil
}

// renderFigures is the Figures section's generated part: a line on the
// run, one table row per bench row (date, commit, host, what is
// compared, A, B, A/B, goal, result, note), then what each section
// compares on.
func renderFigures(run committedRun, file string) string {
	var b strings.Builder
	commit := run.Commit
	if len(commit) > 7 {
		commit = commit[:7]
	}
	if commit == "" {
		commit = "unknown"
	}
	if run.Dirty {
		commit += " (uncommitted changes)"
	}
	date := run.Date.UTC().Format("2006-01-02")
	fmt.Fprintf(&b, "From `docs/measurements/%s`: `make bench` started %s on %s at commit %s, medians of %d rounds per row, load average %s at the start and %s at the end.\n\n",
		file, run.Date.UTC().Format(time.RFC3339), run.Host, commit, run.Rounds, run.LoadStart, run.LoadEnd)
	b.WriteString("| date | commit | host | compared | linerate (A) | reference (B) | A/B | goal | result | note |\n")
	b.WriteString("|---|---|---|---|--:|--:|--:|---|---|---|\n")
	for _, r := range run.Rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", date, commit, mdCell(run.Host), mdCell(r.Name),
			docFigure(r.A, r.UnitA), docFigure(r.B, r.UnitB), docRatio(r.Ratio), mdCell(r.Goal), r.Status, mdCell(r.Note))
	}
	b.WriteString("\nWhat each section compares, and on what:\n\n")
	for _, s := range run.Sections {
		fmt.Fprintf(&b, "- **%s**: %s\n", s.Key, s.Where)
	}
	return b.String()
}

// docFigure is a figure as the terminal table prints it (cell), "-" for
// none.
func docFigure(v *float64, unit string) string {
	if v == nil {
		return cell(figure(math.NaN()), unit)
	}
	return cell(figure(*v), unit)
}

func docRatio(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', 2, 64) + "x"
}

// mdCell keeps a text inside its Markdown table cell.
func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// docs/measurements.md's Figures are the newest committed run's rows as
// renderFigures gives them; -update rewrites them after a new run is
// copied in.
func TestMeasurementsFigures(t *testing.T) {
	run, file, err := newestRun(measurementsDir)
	if err != nil {
		t.Fatal(err)
	}
	want := renderFigures(run, file)
	b, err := os.ReadFile(measurementsDoc)
	if err != nil {
		t.Fatal(err)
	}
	head, rest, ok1 := strings.Cut(string(b), figuresBegin)
	got, tail, ok2 := strings.Cut(rest, figuresEnd)
	if !ok1 || !ok2 {
		t.Fatalf("%s: no %q ... %q markers", measurementsDoc, strings.TrimSpace(figuresBegin), figuresEnd)
	}
	if *update {
		if err := os.WriteFile(measurementsDoc, []byte(head+figuresBegin+want+figuresEnd+tail), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got != want {
		t.Errorf("%s: the Figures differ from %s's rows; run go test ./sweeps/benchtable -run TestMeasurementsFigures -update\n got:\n%s\nwant:\n%s",
			measurementsDoc, file, got, want)
	}
}

// The Figures say every row of the run with its date, commit and host,
// its medians in their units, A/B and MET or MISSED; a figure the run did
// not measure (JSON null) is "-", never 0.
func TestRenderFigures(t *testing.T) {
	var run committedRun
	err := json.Unmarshal([]byte(`{"date":"2026-12-05T20:20:57Z","commit":"29d5974e54fa75b133943f42e1d085318ef1dcf6","host":"AMD EPYC x 2 CPUs, kernel 6.18",
		"load_average_start":"1.31","load_average_end":"3.06","rounds":3,"sections":[{"key":"peer","where":"valkey on loopback"}],
		"rows":[{"section":"peer","name":"GET 1MiB Gbps vs valkey-benchmark","a":31.155,"unit_a":"Gbps","b":13.6642,"unit_b":"Gbps","ratio":2.28004,"goal":">= 1.0x","status":"MET"},
		{"section":"tls","name":"TLS SET 64MiB CPU-s/GB","a":0.8177,"unit_a":"CPU-s/GB","b":null,"unit_b":"CPU-s/GB","ratio":null,"goal":"<= 0.5x","status":"MISSED","note":"none | completed"}]}`), &run)
	if err != nil {
		t.Fatal(err)
	}
	got := renderFigures(run, "2026-12-05.json")
	for _, want := range []string{
		"From `docs/measurements/2026-12-05.json`: `make bench` started 2026-12-05T20:20:57Z on AMD EPYC x 2 CPUs, kernel 6.18 at commit 29d5974, medians of 3 rounds",
		"| 2026-12-05 | 29d5974 | AMD EPYC x 2 CPUs, kernel 6.18 | GET 1MiB Gbps vs valkey-benchmark | 31.16 Gbps | 13.66 Gbps | 2.28x | >= 1.0x | MET |  |",
		"| TLS SET 64MiB CPU-s/GB | 0.818 CPU-s/GB | - | - | <= 0.5x | MISSED | none \\| completed |",
		"- **peer**: valkey on loopback",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the figures lack %q:\n%s", want, got)
		}
	}
	run.Dirty, run.Commit = true, ""
	if got := renderFigures(run, "x.json"); !strings.Contains(got, "| unknown (uncommitted changes) |") {
		t.Errorf("a run of a dirty checkout without a commit renders as:\n%s", got)
	}
	if _, _, err := newestRun(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no committed make bench run") {
		t.Errorf("an empty directory: %v", err)
	}
}
