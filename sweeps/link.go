package sweeps

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/fields"
)

// "Saturate 200 Gbps" is a claim about the link: before the first cell on
// a pair, the link is measured with linerate sink as the server, so a
// cell's figure is read against what the wire gave the client, not
// against a price list (sweeps/calibrate measures; this file is the
// campaign's field and env.json's record).

// Calibration is a campaign's `calibrate` field: how the link between its
// hosts is measured before the first cell.
//
//	calibrate: false                # skip it
//	calibrate: {duration: 3s}       # shorter runs (the demo)
type Calibration struct {
	// Off skips the calibration (calibrate: false).
	Off bool `json:"off,omitempty"`
	// Warmup and Duration are each run's (1 flow and N flows, GET and
	// SET).
	Warmup   lab.Duration `json:"warmup"`
	Duration lab.Duration `json:"duration"`
	// ValueSize is what the sink serves and the SETs carry.
	ValueSize lab.Size `json:"value_size"`
	// Connections is N of the N-flow runs; 0 is the campaign's largest
	// connection count.
	Connections int `json:"connections,omitempty"`
}

// Calibration defaults and bounds.
const (
	DefaultCalibrateDuration  = 10 * time.Second
	DefaultCalibrateWarmup    = time.Second
	DefaultCalibrateValueSize = lab.Size(8 << 20)
	MaxCalibrateDuration      = 10 * time.Minute
	// MinCalibrateDuration: a fifth of a second still moves gigabytes
	// on any link worth calibrating; a quick campaign (a smoke run, a
	// test) need not spend four seconds on its link.
	MinCalibrateDuration  = 200 * time.Millisecond
	MaxCalibrateWarmup    = time.Minute
	MaxCalibrateValueSize = lab.Size(256 << 20)
)

// DefaultCalibration is what `calibrate` left out or true means.
func DefaultCalibration() Calibration {
	return Calibration{Warmup: lab.Duration(DefaultCalibrateWarmup), Duration: lab.Duration(DefaultCalibrateDuration), ValueSize: DefaultCalibrateValueSize}
}

// CalibrationNeed is how long a calibration with the campaign's settings,
// overridden where k sets them, keeps the hosts: four runs (1 and N flows,
// GET and SET), each warmed up, measured and given a minute to start.
func CalibrationNeed(campaign, k Calibration) time.Duration {
	return 4 * (max(k.Warmup, campaign.Warmup).D() + max(k.Duration, campaign.Duration).D() + time.Minute)
}

// Calibrates says whether the campaign measures its link before the first
// cell: not when it says calibrate: false, nor on a provider whose client
// and server share loopback and have no link (Provider.NoLink).
func (c *Campaign) Calibrates() bool {
	return !c.Calibrate.Off && !c.Provider.NoLink
}

// CalibrationConnections is N of the N-flow runs: the calibration's own,
// else the largest connection count of the campaign's cells.
func (c *Campaign) CalibrationConnections() int {
	if c.Calibrate.Connections > 0 {
		return c.Calibrate.Connections
	}
	n := 0
	for _, a := range c.Axes {
		if a.Name != "connections" {
			continue
		}
		for _, v := range a.Values {
			if i, ok := v.(int); ok {
				n = max(n, i)
			}
		}
	}
	if n == 0 {
		n = lab.DefaultConnections
	}
	return max(n, c.ClientCount())
}

// calibrationEstimate is the calibration's share of the plan's wall
// time: four runs, each with a cell's overhead.
func (c *Campaign) calibrationEstimate() time.Duration {
	if !c.Calibrates() {
		return 0
	}
	k := c.Calibrate
	return 4 * (k.Warmup.D() + k.Duration.D() + c.Estimate.CellOverhead.D())
}

// ClientCount is how many client hosts run each cell's load (clients: N).
func (c *Campaign) ClientCount() int { return max(c.Clients, 1) }

// MaxClients bounds clients: N. Sixteen client hosts drive far more than
// the 600 Gbps instance classes; more is a typo.
const MaxClients = infra.MaxClients

// calibration decodes the calibrate field: true, false, or a mapping.
func (d *decoder) calibration(n *yaml.Node, path string, out *Calibration) {
	n = deref(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool" {
		var on bool
		if d.boolean(n, path, &on) {
			out.Off = !on
		}
		return
	}
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "want true, false or a mapping of duration, warmup, value-size, connections; got %s", kindName(n))
		return
	}
	field := func(set func(s string) error) fieldFunc {
		return func(n *yaml.Node, p string) {
			if s, ok := d.scalar(n, p, "a value"); ok {
				if err := set(s); err != nil {
					d.fail(n, p, "%v", err)
				}
			}
		}
	}
	d.mapping(n, path, map[string]fieldFunc{
		"duration":   field(out.SetDuration),
		"warmup":     field(out.SetWarmup),
		"value-size": field(out.SetValueSize),
		"connections": func(n *yaml.Node, p string) {
			var v int64
			if d.integer(n, p, 1, fields.MaxConnections, &v) {
				out.Connections = int(v)
			}
		},
	})
}

// The calibration's fields are set from text by these, holding each to
// its bound: a campaign's calibrate block and `linerate link`'s flags
// read alike.

// SetDuration sets each run's measured window: 200ms to 10m.
func (k *Calibration) SetDuration(s string) error {
	return setDur(s, MinCalibrateDuration, MaxCalibrateDuration, &k.Duration)
}

// SetWarmup sets each run's warmup: 0s to 1m.
func (k *Calibration) SetWarmup(s string) error { return setDur(s, 0, MaxCalibrateWarmup, &k.Warmup) }

func setDur(s string, lo, hi time.Duration, out *lab.Duration) error {
	var v lab.Duration
	if err := v.Set(s); err != nil || v.D() < lo || v.D() > hi {
		return fmt.Errorf("%q: use a duration from %s to %s", s, lo, hi)
	}
	*out = v
	return nil
}

// SetValueSize sets the value size: the verify header's size to 256 MiB.
func (k *Calibration) SetValueSize(s string) error {
	v, err := lab.ParseSize(s)
	if err != nil || v < lab.MinVerifiableSize || v > MaxCalibrateValueSize {
		return fmt.Errorf("%q: use %d B to %s, as %s", s, lab.MinVerifiableSize, MaxCalibrateValueSize, lab.SizeForms)
	}
	k.ValueSize = v
	return nil
}

// SetConnections sets N of the N-flow runs: 1 to fields.MaxConnections.
func (k *Calibration) SetConnections(s string) error {
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 || v > fields.MaxConnections {
		return fmt.Errorf("%q: use 1-%d connections", s, fields.MaxConnections)
	}
	k.Connections = v
	return nil
}

// LinkText prints a calibration for people.
func LinkText(l *Link) string {
	var b strings.Builder
	fmt.Fprintf(&b, "link: %d client host(s) to the server host, %s values, %s each; Gbps on the wire\n", l.Clients, l.ValueSize, l.Duration)
	fmt.Fprintf(&b, "  %-26s %10s %10s\n", "", "1 conn", fmt.Sprintf("%d conns", l.Connections))
	fmt.Fprintf(&b, "  %-26s %10.2f %10.2f\n", "GET (server to client)", l.GET.PerFlowGbps, l.GET.Gbps)
	fmt.Fprintf(&b, "  %-26s %10.2f %10.2f\n", "SET (client to server)", l.SET.PerFlowGbps, l.SET.Gbps)
	for _, n := range l.NICs {
		fmt.Fprintf(&b, "  %s: %s", n.Host, n.Interface)
		if n.Driver != "" {
			fmt.Fprintf(&b, " (%s)", n.Driver)
		}
		if n.MTU > 0 {
			fmt.Fprintf(&b, ", MTU %d", n.MTU)
		}
		b.WriteString("\n")
	}
	for _, p := range l.Problems {
		fmt.Fprintf(&b, "  not read: %s\n", p)
	}
	return b.String()
}

// clients decodes clients: N.
func (d *decoder) clients(n *yaml.Node, path string, out *int) {
	var v int64
	if d.integer(n, path, 1, MaxClients, &v) {
		*out = int(v)
	}
}

// Errorf is an error at the place of the campaign's top-level field
// (clients, calibrate) in its file.
func (c *Campaign) Errorf(field, format string, args ...any) error {
	at := c.lines[field]
	return SpecErrors{{File: c.File, Line: at.line, Col: at.col, Field: field, Msg: fmt.Sprintf(format, args...)}}
}

// checkClients refuses cells with fewer connections than client hosts:
// each client host runs at least one.
func (c *Campaign) checkClients(p *Plan) error {
	if c.ClientCount() < 2 {
		return nil
	}
	for _, cell := range p.Cells {
		if n := cell.Workload.Resolve().Connections; n < c.ClientCount() {
			at := c.lines["workload.connections"]
			if at.line == 0 {
				at = c.lines["clients"]
			}
			return SpecErrors{{File: c.File, Line: at.line, Col: at.col, Field: "workload.connections",
				Msg: fmt.Sprintf("%d connections for %d client hosts (clients: %d): each host runs at least one; connections is the total", n, c.ClientCount(), c.ClientCount())}}
		}
	}
	return nil
}

// Link is env.json's `link`: the link between the pair as measured
// before the first cell, by `linerate bench` from the client hosts
// against `linerate sink` on the server host. Gbps are on the wire (RESP
// framing included, as the cells' wire bytes), in the direction the
// payload goes.
type Link struct {
	Measured    time.Time    `json:"measured"`
	Warmup      lab.Duration `json:"warmup"`
	Duration    lab.Duration `json:"duration"`
	ValueSize   lab.Size     `json:"value_size"`
	Connections int          `json:"connections"` // N of the N-flow runs, over every client host
	Clients     int          `json:"clients"`
	// GET is server to client, SET client to server.
	GET LinkDirection `json:"get"`
	SET LinkDirection `json:"set"`
	// NICs are the interfaces that carried it: the server's, each client's.
	NICs []LinkNIC `json:"nics"`
	// Problems are what could not be read (a NIC's driver), not fatal.
	Problems []string `json:"problems,omitempty"`
}

// LinkDirection is one direction's figures.
type LinkDirection struct {
	// PerFlowGbps is one connection from the first client host.
	PerFlowGbps float64 `json:"per_flow_gbps"`
	// Gbps is Connections connections from every client host: the
	// ceiling cells are held to.
	Gbps float64 `json:"gbps"`
}

// LinkNIC is one host's interface on the data plane.
type LinkNIC struct {
	Host      string `json:"host"` // server, client, client-2 …
	Interface string `json:"interface"`
	Driver    string `json:"driver,omitempty"`
	MTU       int    `json:"mtu,omitempty"`
}

// Ceiling is the link's N-flow Gbps in op's direction, 0 when unknown.
func (l *Link) Ceiling(op lab.Op) float64 {
	switch {
	case l == nil:
		return 0
	case op.Base() == lab.OpSet: // MSET moves data as SET does
		return l.SET.Gbps
	}
	return l.GET.Gbps
}

// MaxGbps is the higher of the two directions' ceilings: the line Gbps
// charts draw.
func (l *Link) MaxGbps() float64 {
	if l == nil {
		return 0
	}
	return max(l.GET.Gbps, l.SET.Gbps)
}
