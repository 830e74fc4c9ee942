package plots

import (
	"fmt"
	"strings"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/sweeps"
)

// The link between the hosts, as env.json records it from the calibration
// before the first cell, is each Gbps chart's ceiling line, in the
// direction of the chart's operation; the report lists the cells whose
// NIC counted the cloud's allowance exceeded.

// linkCeiling is the Gbps line a group's chart draws, with its label: the
// ceiling given by hand (LinkGbps), else the calibrated one in the group's
// direction (GETs server to client, SETs client to server, a mix the
// higher), 0 when there is none.
func (c *Campaign) linkCeiling(g *Group) (float64, string) {
	if c.LinkGbps > 0 {
		return c.LinkGbps, fmt.Sprintf("link ceiling %s Gbps", formatGbps(c.LinkGbps))
	}
	l := c.Link
	if l == nil {
		return 0, ""
	}
	y := l.MaxGbps()
	// MGET moves data as GET does, MSET as SET; a mix keeps the higher.
	if op := lab.Op(g.Op).Base(); op == lab.OpGet || op == lab.OpSet {
		y = l.Ceiling(op)
	}
	if y <= 0 {
		return 0, ""
	}
	// Short: the legend is narrow, and the chart's op says the direction.
	return y, fmt.Sprintf("link %s Gbps (calibrated, %d conns)", formatGbps(y), l.Connections)
}

// reportShaped is a cell during which a NIC's allowance counter rose.
type reportShaped struct {
	CellID, Counters string
}

// shapedCells lists the run's cells whose NIC counted an allowance
// exceeded, with the counters.
func shapedCells(c *Campaign) []reportShaped {
	var out []reportShaped
	for _, r := range c.Run.Sorted() {
		if a := sweeps.Allowances(r.NIC); len(a) > 0 {
			out = append(out, reportShaped{CellID: r.CellID, Counters: strings.Join(a, ", ")})
		}
	}
	return out
}

// reportEdge is one op of a cell whose requests were too long for its
// window (lab.EdgeBiasOf), with the note the record carries.
type reportEdge struct {
	CellID, Note string
}

// edgeBiasedCells lists the run's cells whose p99 or max latency passed
// a tenth of the window, judged again from each record's latencies and
// window, so records written before the record kept it are listed too.
func edgeBiasedCells(c *Campaign) []reportEdge {
	var out []reportEdge
	for _, r := range c.Run.Sorted() {
		if r.Result == nil {
			continue
		}
		for _, e := range lab.EdgeBiasOf(r.Result) {
			out = append(out, reportEdge{CellID: r.CellID, Note: e.Note()})
		}
	}
	return out
}
