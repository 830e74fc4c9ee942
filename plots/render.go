package plots

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/linerate/linerate/sweeps"
)

// ChartsDir is where Render writes by default, inside the run directory.
const ChartsDir = "charts"

// TablesFile is the Markdown tables' file name beside the charts.
const TablesFile = "tables.md"

// Options choose what Render writes.
type Options struct {
	Out     string   // output directory; default RUNDIR/charts
	Formats []string // png, svg; default both
	// Kinds limits the charts to these kinds (size, probe, load, mix,
	// soak, cpu); default all.
	Kinds []string
}

// Written lists what Render wrote.
type Written struct {
	Dir    string
	Files  []string // paths, in write order
	Charts []*Chart
}

// ParseFormats reads a --format list such as "png,svg".
func ParseFormats(s string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		switch f {
		case FormatPNG, FormatSVG:
			if !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		case "":
		default:
			return nil, fmt.Errorf("format %q: use png, svg or png,svg", f)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("format %q: use png, svg or png,svg", s)
	}
	return out, nil
}

// Render draws every chart of a campaign in each format and writes the
// Markdown tables beside them. Files are replaced atomically, so a reader
// never sees half a chart.
func Render(c *Campaign, opt Options) (*Written, error) {
	if opt.Out == "" {
		opt.Out = filepath.Join(c.Dir, ChartsDir)
	}
	if len(opt.Formats) == 0 {
		opt.Formats = []string{FormatPNG, FormatSVG}
	}
	if err := os.MkdirAll(opt.Out, 0o755); err != nil {
		return nil, fmt.Errorf("create chart directory: %w", err)
	}
	out := &Written{Dir: opt.Out}
	for _, ch := range Charts(c) {
		if len(opt.Kinds) > 0 && !slices.Contains(opt.Kinds, ch.Kind) {
			continue
		}
		out.Charts = append(out.Charts, ch)
	}
	for _, ch := range out.Charts {
		for _, f := range opt.Formats {
			b, err := Draw(ch, f)
			if err != nil {
				return out, err
			}
			p := filepath.Join(opt.Out, ch.Name+"."+f)
			if err := sweeps.WriteFileAtomic(p, b); err != nil {
				return out, err
			}
			out.Files = append(out.Files, p)
		}
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, Tables(c)); err != nil {
		return out, err
	}
	p := filepath.Join(opt.Out, TablesFile)
	if err := sweeps.WriteFileAtomic(p, md.Bytes()); err != nil {
		return out, err
	}
	out.Files = append(out.Files, p)
	return out, nil
}
