package sweeps

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// SpecError is one problem in a campaign file, located to the line and named
// by its field path, so the operator can fix the file without guessing.
type SpecError struct {
	File  string
	Line  int
	Col   int
	Field string // dotted path such as versions[2].store or workload.value-size
	Msg   string
}

func (e *SpecError) Error() string {
	loc := e.File
	switch {
	case e.Line > 0 && e.Col > 0:
		loc = fmt.Sprintf("%s:%d:%d", e.File, e.Line, e.Col)
	case e.Line > 0:
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Field == "" {
		return loc + ": " + e.Msg
	}
	return loc + ": " + e.Field + ": " + e.Msg
}

// SpecErrors is every problem found in one file, in file order.
type SpecErrors []*SpecError

func (es SpecErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// decoder walks yaml.Node trees by hand: decoding into structs would lose the
// line of a bad value and would accept "32" where a number is meant.
// pos is where a node stands in its file.
type pos struct{ line, col int }

type decoder struct {
	file string
	errs SpecErrors
}

func (d *decoder) fail(n *yaml.Node, field, format string, a ...any) {
	e := &SpecError{File: d.file, Field: field, Msg: fmt.Sprintf(format, a...)}
	if n != nil {
		e.Line, e.Col = n.Line, n.Column
	}
	d.errs = append(d.errs, e)
}

func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!int":
			return "a number"
		case "!!float":
			return "a decimal number"
		case "!!bool":
			return "true/false"
		case "!!null":
			return "empty"
		}
		return "a string"
	}
	return "something else"
}

// fieldFunc decodes one mapping value; path is the value's field path.
type fieldFunc func(n *yaml.Node, path string)

// mapping decodes a mapping node strictly: every key must be one of fields,
// and no key may appear twice. It returns the keys seen, with their nodes.
func (d *decoder) mapping(n *yaml.Node, path string, fields map[string]fieldFunc) map[string]*yaml.Node {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "want a mapping of fields, got %s", kindName(n))
		return nil
	}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name := k.Value
		kp := join(path, name)
		if prev, dup := seen[name]; dup {
			d.fail(k, kp, "given twice (first on line %d)", prev.Line)
			continue
		}
		seen[name] = k
		f, ok := fields[name]
		if !ok {
			d.fail(k, kp, "unknown field; %s accepts %s", orTop(path), knownFields(fields))
			continue
		}
		f(v, kp)
	}
	return seen
}

func orTop(path string) string {
	if path == "" {
		return "the campaign"
	}
	return path
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func knownFields(fields map[string]fieldFunc) string {
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// scalar returns the scalar's text, or reports a type error.
func (d *decoder) scalar(n *yaml.Node, path, want string) (string, bool) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		d.fail(n, path, "want %s, got %s", want, kindName(n))
		return "", false
	}
	return n.Value, true
}

func (d *decoder) str(n *yaml.Node, path string, out *string) {
	n = deref(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() != "!!str" && n.ShortTag() != "!!null" {
		// A number or boolean where text is meant is almost always a slip
		// (an unquoted version such as 9.1 would become 9.1 the float).
		d.fail(n, path, "want a string, got %s; quote it", kindName(n))
		return
	}
	if s, ok := d.scalar(n, path, "a string"); ok {
		*out = s
	}
}

func (d *decoder) integer(n *yaml.Node, path string, lo, hi int64, out *int64) bool {
	n = deref(n)
	s, ok := d.scalar(n, path, "a whole number")
	if !ok {
		return false
	}
	if n.ShortTag() != "!!int" {
		d.fail(n, path, "want a whole number, got %s %q", kindName(n), s)
		return false
	}
	v, err := strconv.ParseInt(s, 0, 64)
	if err != nil || v < lo || v > hi {
		d.fail(n, path, "%s is outside %d-%d", s, lo, hi)
		return false
	}
	*out = v
	return true
}

func (d *decoder) boolean(n *yaml.Node, path string, out *bool) bool {
	n = deref(n)
	s, ok := d.scalar(n, path, "true or false")
	if !ok {
		return false
	}
	if n.ShortTag() != "!!bool" {
		d.fail(n, path, "want true or false, got %q", s)
		return false
	}
	*out = s == "true" || s == "True" || s == "TRUE"
	return true
}

// list accepts one scalar or a non-empty list of scalars; each element is
// handed to each with its own node so errors point at the element.
func (d *decoder) list(n *yaml.Node, path string, each func(el *yaml.Node, path string)) {
	n = deref(n)
	switch n.Kind {
	case yaml.ScalarNode:
		each(n, path)
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			d.fail(n, path, "empty list; give at least one value")
			return
		}
		for i, el := range n.Content {
			el = deref(el)
			p := fmt.Sprintf("%s[%d]", path, i)
			if el.Kind != yaml.ScalarNode {
				d.fail(el, p, "want a value, got %s (lists do not nest)", kindName(el))
				continue
			}
			each(el, p)
		}
	default:
		d.fail(n, path, "want a value or a list of values, got %s", kindName(n))
	}
}

// noAliases finds the first alias (*name) in the tree, with its field path.
// Aliases are refused everywhere: expanding them is how a small file
// becomes billions of nodes, and a campaign reads best written out.
func noAliases(n *yaml.Node, path string) (*yaml.Node, string) {
	switch n.Kind {
	case yaml.AliasNode:
		return n, path
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if a, p := noAliases(c, path); a != nil {
				return a, p
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if a, p := noAliases(n.Content[i], path); a != nil {
				return a, p
			}
			if a, p := noAliases(n.Content[i+1], join(path, n.Content[i].Value)); a != nil {
				return a, p
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if a, p := noAliases(c, fmt.Sprintf("%s[%d]", path, i)); a != nil {
				return a, p
			}
		}
	}
	return nil, ""
}

// plain converts an opaque node (provider settings) to plain Go values for
// the JSON record. The tree holds no aliases (noAliases), so this is linear
// in the file.
func plain(n *yaml.Node) any {
	n = deref(n)
	switch n.Kind {
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			m[n.Content[i].Value] = plain(n.Content[i+1])
		}
		return m
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		for i, c := range n.Content {
			out[i] = plain(c)
		}
		return out
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err == nil {
			return v
		}
		return n.Value
	}
	return nil
}
