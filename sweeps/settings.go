package sweeps

// A campaign's provider block is read in two steps: the campaign keeps it
// as written (the kind, and the rest as a node), and whoever knows the
// kind's settings type decodes it here, strictly and with the place of
// every error, as the rest of the campaign is read.

import (
	"encoding"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/linerate/linerate/infra"
)

// Decode reads the provider's settings (every key of its block but kind)
// into out, a pointer to a struct whose fields carry yaml tags: strings,
// booleans, whole and decimal numbers, durations (4h), lists of strings,
// nested structs (a mapping) and types that read themselves from text
// (encoding.TextUnmarshaler; a struct that is one also takes a mapping of
// its fields). An unknown key, a key given twice or a value of the wrong
// type is an error at its line and column naming its field path
// (provider.server.data-address). Then out's Validate, when it has one:
// the infra.FieldErrors it returns are placed at the fields they name (at
// the block when the field is not written).
func (p Provider) Decode(out any) error {
	v := reflect.ValueOf(out)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("provider %s: settings must be a pointer to a struct, not %T", p.Kind, out)
	}
	d := &decoder{file: p.file}
	if n := deref(p.node); n != nil && n.Kind == yaml.MappingNode {
		fields := d.structFields(v.Elem(), "provider")
		fields["kind"] = func(*yaml.Node, string) {} // read by the campaign
		d.mapping(n, "provider", fields)
	}
	if len(d.errs) > 0 {
		return d.errs
	}
	if val, ok := out.(interface{ Validate() error }); ok {
		if err := val.Validate(); err != nil {
			return p.Locate(err)
		}
	}
	return nil
}

// Locate places the infra.FieldErrors in err at the fields of the block
// they name (provider.server.user at the server's line); any other error
// is placed at the block. A nil err is nil.
func (p Provider) Locate(err error) error {
	fields, other := infra.FieldErrors(err)
	if len(fields) == 0 && len(other) == 0 {
		return nil
	}
	var errs SpecErrors
	at := func(n *yaml.Node, field, msg string) {
		e := &SpecError{File: p.file, Field: field, Msg: msg}
		if n != nil {
			e.Line, e.Col = n.Line, n.Column
		}
		errs = append(errs, e)
	}
	for _, fe := range fields {
		at(p.find(fe.Field), join("provider", fe.Field), fe.Msg)
	}
	for _, e := range other {
		at(deref(p.node), "provider", e.Error())
	}
	return errs
}

// find is the node of a dotted field path in the block: the deepest part
// of it that is written, the block itself when none is.
func (p Provider) find(path string) *yaml.Node {
	n := deref(p.node)
	for _, part := range strings.Split(path, ".") {
		name, index, _ := strings.Cut(strings.TrimSuffix(part, "]"), "[")
		if n == nil || n.Kind != yaml.MappingNode {
			break
		}
		next := valueOf(n, name)
		if next == n {
			break
		}
		n = deref(next)
		// clients[1]: the list's element, when it is written.
		if i, err := strconv.Atoi(index); err == nil && n.Kind == yaml.SequenceNode && i >= 0 && i < len(n.Content) {
			n = deref(n.Content[i])
		}
	}
	return n
}

var (
	durationType  = reflect.TypeFor[time.Duration]()
	unmarshalText = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// structFields are the decoders of v's fields by their yaml names.
func (d *decoder) structFields(v reflect.Value, path string) map[string]fieldFunc {
	fields := map[string]fieldFunc{}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name == "" || name == "-" || !t.Field(i).IsExported() {
			continue
		}
		f := v.Field(i)
		fields[name] = func(n *yaml.Node, p string) { d.value(n, p, f) }
	}
	return fields
}

// value decodes n into v by v's type.
func (d *decoder) value(n *yaml.Node, path string, v reflect.Value) {
	n = deref(n)
	if v.Addr().Type().Implements(unmarshalText) && (n.Kind == yaml.ScalarNode || v.Kind() != reflect.Struct) {
		if s, ok := d.scalar(n, path, "a value"); ok {
			if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
				d.fail(n, path, "%q: %v", s, err)
			}
		}
		return
	}
	switch {
	case v.Type() == durationType:
		var s string
		d.str(n, path, &s)
		if s == "" {
			return
		}
		dur, err := time.ParseDuration(s)
		if err != nil {
			d.fail(n, path, "%q: want a duration such as 4h or 90m", s)
			return
		}
		v.SetInt(int64(dur))
	case v.Kind() == reflect.String:
		var s string
		d.str(n, path, &s)
		v.SetString(s)
	case v.Kind() == reflect.Bool:
		var b bool
		d.boolean(n, path, &b)
		v.SetBool(b)
	case v.CanInt():
		var i int64
		if d.integer(n, path, math.MinInt32, math.MaxInt32, &i) {
			v.SetInt(i)
		}
	case v.CanFloat():
		s, ok := d.scalar(n, path, "a number")
		if !ok {
			return
		}
		f, err := strconv.ParseFloat(s, 64)
		if (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") || err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			d.fail(n, path, "want a number such as 3.5, got %q", s)
			return
		}
		v.SetFloat(f)
	case v.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.fail(n, path, "want a list such as [a, b], got %s", kindName(n))
			return
		}
		list := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, el := range n.Content {
			d.value(el, fmt.Sprintf("%s[%d]", path, i), list.Index(i))
		}
		v.Set(list)
	case v.Kind() == reflect.Struct:
		fields := d.structFields(v, path)
		if len(fields) == 0 {
			d.fail(n, path, "want a value, got %s", kindName(n))
			return
		}
		d.mapping(n, path, fields)
	default:
		d.fail(n, path, "cannot be read into %s", v.Type()) // a settings type this decoder lacks
	}
}
