package plots

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/linerate/linerate/lab"
)

var svgText = regexp.MustCompile(`<text x="([-0-9.]+)" y="([-0-9.]+)"[^>]*>([^<]*)</text>`)

// Every swept size gets a readable label under the x axis: drawn once and
// clear of its neighbours on the same line, for the study's sizes (12 and
// 16 MB sit 0.4 of an octave apart) and for a denser sweep.
func TestXTickLabelsReadable(t *testing.T) {
	base := chartsByName(load(t, fixtureRun(t)))["GET-gbps"]
	mib := func(ns ...float64) []lab.Size {
		var out []lab.Size
		for _, n := range ns {
			out = append(out, lab.Size(n*(1<<20)))
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		sizes []lab.Size
	}{
		{"fixture", []lab.Size{1e6, 2e6, 4e6, 8e6, 16e6, 64e6}},
		{"study", []lab.Size{1e6, 2e6, 4e6, 8e6, 12e6, 16e6, 32e6, 64e6}},
		{"dense", mib(1, 1.5, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := *base
			ch.XTicks = nil
			for _, s := range tc.sizes {
				ch.XTicks = append(ch.XTicks, Tick{Value: log2(s), Label: sizeLabel(s)})
			}
			ch.XMin, ch.XMax = ch.XTicks[0].Value-0.4, ch.XTicks[len(ch.XTicks)-1].Value+0.4
			svg, err := Draw(&ch, FormatSVG)
			if err != nil {
				t.Fatal(err)
			}
			type label struct {
				x, w float64
				text string
			}
			want := map[string]bool{}
			for _, tk := range ch.XTicks {
				want[tk.Label] = true
			}
			rows := map[string][]label{} // by baseline
			seen := map[string]int{}
			sty := textStyle(9)
			for _, m := range svgText.FindAllStringSubmatch(strings.ReplaceAll(string(svg), "\n", " "), -1) {
				if !want[m[3]] {
					continue
				}
				x, _ := strconv.ParseFloat(m[1], 64)
				seen[m[3]]++
				rows[m[2]] = append(rows[m[2]], label{x, float64(sty.Width(m[3]).Points()), m[3]})
			}
			for l := range want {
				if seen[l] != 1 {
					t.Errorf("label %q drawn %d times", l, seen[l])
				}
			}
			for y, ls := range rows {
				sort.Slice(ls, func(i, j int) bool { return ls[i].x < ls[j].x })
				for i := 1; i < len(ls); i++ {
					if gap := ls[i].x - (ls[i-1].x + ls[i-1].w); gap < 2 {
						t.Errorf("at y %s %q and %q are %.1f pt apart", y, ls[i-1].text, ls[i].text, gap)
					}
				}
			}
			if t.Failed() {
				t.Log(fmt.Sprint(rows))
			}
		})
	}
}
