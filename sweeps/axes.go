package sweeps

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/fields"
	"github.com/linerate/linerate/lab/keys"
)

// Axis is one workload field of a campaign with the values it takes. A field
// given as a single value is an axis of one value: it does not vary and so
// does not appear in cell IDs.
type Axis struct {
	Name   string `json:"name"` // the bench flag's long name, e.g. value-size
	Values []any  `json:"-"`
	Line   int    `json:"-"`
}

// MarshalJSON renders values as the flags would take them.
func (a Axis) MarshalJSON() ([]byte, error) {
	def := axisByName[a.Name]
	vals := make([]string, len(a.Values))
	for i, v := range a.Values {
		vals[i] = def.format(v)
	}
	return json.Marshal(struct {
		Name   string   `json:"name"`
		Values []string `json:"values"`
	}{a.Name, vals})
}

// Prefill is the prefill setting of a cell: auto prefills cells that GET.
type Prefill string

const (
	PrefillAuto Prefill = "auto"
	PrefillYes  Prefill = "true"
	PrefillNo   Prefill = "false"
)

// axisDef knows how to read, apply and name one workload field.
type axisDef struct {
	name    string
	parse   func(n *yaml.Node) (any, error) // n is a scalar
	apply   func(w *lab.Workload, v any)
	format  func(v any) string
	segment func(v any) string // in cell IDs when the axis varies
}

// axisDefs in cell-ID order after version, op and size: the axes with
// parsing or a cell-ID segment of their own, then one for every other
// workload field with a campaign key (fields.Registry), in the registry's
// order, so a field added there is a campaign axis without an entry here.
var axisDefs = append(namedAxes, registryAxes(namedAxes)...)

// namedAxes in cell-ID order. ratio and value-size are named by the op and
// size segments, always present.
var namedAxes = []axisDef{
	{name: "ratio",
		parse: func(n *yaml.Node) (any, error) {
			switch strings.ToUpper(n.Value) {
			case "GET":
				return lab.Ratio{Gets: 100}, nil
			case "SET":
				return lab.Ratio{Sets: 100}, nil
			}
			return lab.ParseRatio(n.Value)
		},
		apply:   func(w *lab.Workload, v any) { w.Ratio = v.(lab.Ratio) },
		format:  func(v any) string { return v.(lab.Ratio).String() },
		segment: func(v any) string { return opSegment(v.(lab.Ratio)) }},
	{name: "value-size",
		parse:   func(n *yaml.Node) (any, error) { return lab.ParseSizeMix(n.Value) },
		apply:   func(w *lab.Workload, v any) { w.ValueSz = v.(lab.SizeMix) },
		format:  func(v any) string { return v.(lab.SizeMix).String() },
		segment: func(v any) string { return SizeSegment(v.(lab.SizeMix)) }},
	intAxis("connections", "c", func(w *lab.Workload, v int) { w.Connections = v }),
	intAxis("pipeline", "P", func(w *lab.Workload, v int) { w.Pipeline = v }),
	intAxis("threads", "t", func(w *lab.Workload, v int) { w.Threads = v }),
	{name: "cpu-list",
		parse: func(n *yaml.Node) (any, error) {
			l, err := lab.ParseCPUList(n.Value)
			if err == nil && len(l) == 0 {
				err = fmt.Errorf("empty CPU list; use %s", lab.CPUListForms)
			}
			return l, err
		},
		apply:   func(w *lab.Workload, v any) { w.CPUList = v.(lab.CPUList) },
		format:  func(v any) string { return v.(lab.CPUList).String() },
		segment: func(v any) string { return "cpus" + v.(lab.CPUList).String() }},
	intAxis("keyspace", "n", func(w *lab.Workload, v int) { w.Keyspace = v }),
	intAxis("key-size", "k", func(w *lab.Workload, v int) { w.KeySize = v }),
	{name: "key-dist",
		parse:  func(n *yaml.Node) (any, error) { return keys.Parse(n.Value) },
		apply:  func(w *lab.Workload, v any) { w.KeyDist = v.(keys.Dist) },
		format: func(v any) string { return v.(keys.Dist).String() },
		// zipf:0.9 is zipf0.9, gaussian:0.5,0.1 is gaussian0.5-0.1: part
		// of a file name.
		segment: func(v any) string {
			return strings.NewReplacer(":", "", ",", "-").Replace(v.(keys.Dist).String())
		}},
	{name: "prefill",
		parse: func(n *yaml.Node) (any, error) {
			if n.ShortTag() == "!!bool" {
				var b bool
				if err := n.Decode(&b); err != nil {
					return nil, err
				}
				if b {
					return PrefillYes, nil
				}
				return PrefillNo, nil
			}
			if n.Value == string(PrefillAuto) {
				return PrefillAuto, nil
			}
			return nil, fmt.Errorf("%q: use auto (prefill cells that GET), true or false", n.Value)
		},
		apply: func(w *lab.Workload, v any) {
			// Read from the resolved ratio: a campaign that names no op
			// GETs all the same (the bench's default), and a GET of a key
			// never written is a miss, not a transfer.
			r := w.Resolve()
			w.Prefill = v.(Prefill) == PrefillYes || (v.(Prefill) == PrefillAuto && (r.Ratio.Gets > 0 || r.Command.Reads()))
		},
		format: func(v any) string { return string(v.(Prefill)) },
		segment: func(v any) string {
			return map[Prefill]string{PrefillAuto: "prefill-auto", PrefillYes: "prefill", PrefillNo: "noprefill"}[v.(Prefill)]
		}},
	durAxis("warmup", "w", func(w *lab.Workload, v lab.Duration) { w.Warmup = v }),
	durAxis("duration", "d", func(w *lab.Workload, v lab.Duration) { w.Duration = v }),
	durAxis("request-timeout", "to", func(w *lab.Workload, v lab.Duration) { w.RequestTimeout = v }),
	{name: "verify",
		parse: func(n *yaml.Node) (any, error) {
			var v lab.Verify
			err := v.Set(n.Value)
			return v, err
		},
		apply:   func(w *lab.Workload, v any) { w.Verify = v.(lab.Verify) },
		format:  func(v any) string { return string(v.(lab.Verify)) },
		segment: func(v any) string { return "verify-" + string(v.(lab.Verify)) }},
	{name: "engine",
		parse:   func(n *yaml.Node) (any, error) { return n.Value, nil },
		apply:   func(w *lab.Workload, v any) { w.Engine = v.(string) },
		format:  func(v any) string { return v.(string) },
		segment: func(v any) string { return v.(string) }},
	// Open loop, after every older axis so the cell IDs of
	// campaigns without them stay as they were. A list of rates is a
	// load axis.
	{name: "rate",
		parse:   func(n *yaml.Node) (any, error) { return lab.ParseRate(n.Value) },
		apply:   func(w *lab.Workload, v any) { w.Rate = v.(lab.Rate) },
		format:  func(v any) string { return v.(lab.Rate).String() },
		segment: func(v any) string { return "rate" + v.(lab.Rate).String() }},
	{name: "ramp",
		parse:   func(n *yaml.Node) (any, error) { return lab.ParseRamp(n.Value) },
		apply:   func(w *lab.Workload, v any) { w.Ramp = v.(lab.Ramp) },
		format:  func(v any) string { return v.(lab.Ramp).String() },
		segment: func(v any) string { return "ramp" + strings.ReplaceAll(v.(lab.Ramp).String(), ":", "-") }},
	{name: "arrival",
		parse:   func(n *yaml.Node) (any, error) { return lab.ParseArrival(n.Value) },
		apply:   func(w *lab.Workload, v any) { w.Arrival = v.(lab.Arrival) },
		format:  func(v any) string { return string(v.(lab.Arrival)) },
		segment: func(v any) string { return string(v.(lab.Arrival)) }},
	durAxis("queue-limit", "ql", func(w *lab.Workload, v lab.Duration) { w.QueueLimit = v }),
	{name: "probe",
		parse:   func(n *yaml.Node) (any, error) { return lab.ParseProbe(n.Value) },
		apply:   func(w *lab.Workload, v any) { w.Probe = v.(lab.Probe) },
		format:  func(v any) string { return v.(lab.Probe).String() },
		segment: func(v any) string { return "probe" + v.(lab.Probe).String() }},
	// Commands, after the open-loop axes for the same reason.
	// A command has no segment of its own: mget and mset name the op
	// segment (MGET, MSET), get and set are the ratio's GET and SET.
	{name: "command",
		parse: func(n *yaml.Node) (any, error) {
			var c lab.Command
			err := c.Set(n.Value)
			return c, err
		},
		apply:   func(w *lab.Workload, v any) { w.Command = v.(lab.Command) },
		format:  func(v any) string { return string(v.(lab.Command)) },
		segment: func(v any) string { return "" }},
	intAxis("keys-per-op", "keys", func(w *lab.Workload, v int) { w.KeysPerOp = v }),
}

// registryAxes is an axis for each registry field with a campaign key
// that named has not: its values read and written as its flag's, its
// cell-ID segment the key and the value.
func registryAxes(named []axisDef) []axisDef {
	var out []axisDef
	for _, f := range fields.Registry {
		if f.Key == "" || slices.ContainsFunc(named, func(a axisDef) bool { return a.name == f.Key }) {
			continue
		}
		out = append(out, axisDef{name: f.Key,
			parse:   func(n *yaml.Node) (any, error) { return f.Parse(n.Value) },
			apply:   f.Apply,
			format:  f.Format,
			segment: func(v any) string { return f.Key + "-" + fileSafe(f.Format(v)) },
		})
	}
	return out
}

// fileSafe keeps a segment a file name: a path separator or a space
// becomes "-".
func fileSafe(s string) string { return strings.NewReplacer("/", "-", " ", "-").Replace(s) }

// SizeSegment names a value size in cell IDs: one size as it always was
// (16MiB), weighted sizes as 1MiBw60+16MiBw30, a range as 1MiB-64MiB.
func SizeSegment(m lab.SizeMix) string {
	return strings.NewReplacer(":", "w", ",", "+").Replace(m.String())
}

var axisByName = func() map[string]axisDef {
	m := map[string]axisDef{}
	for _, a := range axisDefs {
		m[a.name] = a
	}
	return m
}()

// check holds one listed value to the bounds its field has on its own:
// the rule in lab/fields, the one the bench flag meets too, so both read
// alike.
func (def axisDef) check(v any) error {
	var w lab.Workload
	def.apply(&w, v)
	var fe *fields.FieldError
	if err := fields.CheckField(w, def.name); errors.As(err, &fe) {
		return errors.New(fe.Msg)
	} else if err != nil {
		return err
	}
	return nil
}

func intAxis(name, prefix string, set func(*lab.Workload, int)) axisDef {
	return axisDef{name: name,
		parse: func(n *yaml.Node) (any, error) {
			if n.ShortTag() != "!!int" {
				return nil, fmt.Errorf("want a whole number, got %s %q", kindName(n), n.Value)
			}
			v, err := strconv.Atoi(n.Value)
			if err != nil {
				return nil, fmt.Errorf("%s is not a whole number the bench takes", n.Value)
			}
			return v, nil
		},
		apply:   func(w *lab.Workload, v any) { set(w, v.(int)) },
		format:  func(v any) string { return strconv.Itoa(v.(int)) },
		segment: func(v any) string { return prefix + strconv.Itoa(v.(int)) },
	}
}

func durAxis(name, prefix string, set func(*lab.Workload, lab.Duration)) axisDef {
	return axisDef{name: name,
		parse: func(n *yaml.Node) (any, error) {
			var d lab.Duration
			if n.ShortTag() != "!!str" {
				return nil, fmt.Errorf("want a duration such as 5s, got %s %q", kindName(n), n.Value)
			}
			if err := d.Set(n.Value); err != nil {
				return nil, err
			}
			return d, nil
		},
		apply:   func(w *lab.Workload, v any) { set(w, v.(lab.Duration)) },
		format:  func(v any) string { return v.(lab.Duration).String() },
		segment: func(v any) string { return prefix + v.(lab.Duration).String() },
	}
}

// opSegment names a ratio: GET, SET, or mixGETS-SETS.
func opSegment(r lab.Ratio) string {
	switch {
	case r.Sets == 0:
		return string(lab.OpGet)
	case r.Gets == 0:
		return string(lab.OpSet)
	}
	return fmt.Sprintf("mix%d-%d", r.Gets, r.Sets)
}

// workload decodes the workload block into axes, in axisDefs order.
func (d *decoder) workload(n *yaml.Node, path string, lines map[string]pos) []Axis {
	got := map[string]*Axis{}
	fields := map[string]fieldFunc{}
	for _, def := range axisDefs {
		def := def
		fields[def.name] = func(n *yaml.Node, p string) {
			a := &Axis{Name: def.name, Line: deref(n).Line}
			lines[p] = pos{deref(n).Line, deref(n).Column}
			seen := map[string]int{}
			d.list(n, p, func(el *yaml.Node, ep string) {
				v, err := def.parse(el)
				if err == nil {
					err = def.check(v)
				}
				if err != nil {
					d.fail(el, ep, "%v", err)
					return
				}
				key := def.format(v)
				if prev, dup := seen[key]; dup {
					d.fail(el, ep, "%s is listed twice (also line %d)", key, prev)
					return
				}
				seen[key] = el.Line
				a.Values = append(a.Values, v)
			})
			got[def.name] = a
		}
	}
	d.mapping(n, path, fields)
	var axes []Axis
	for _, def := range axisDefs {
		if a, ok := got[def.name]; ok && len(a.Values) > 0 {
			axes = append(axes, *a)
		}
	}
	return axes
}
