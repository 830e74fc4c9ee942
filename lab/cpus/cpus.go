package cpus

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// List is a list of distinct CPU numbers, kept in the order written: the
// bench pins worker i to list[i mod n]. Its text form is the kernel's list
// format ("0-3,8,10-11"), the form of /sys/devices/system/cpu/online,
// /proc/irq/N/smp_affinity_list, taskset -c and docker --cpuset-cpus. Its
// JSON form is an array of numbers, as bench records have always had it
// (a cell's hash covers it); the list format is read as well.
type List []int

// Max bounds CPU numbers: 8192 is the most CPUs a Linux kernel can be
// built for (x86 MAXSMP), so a higher number is a typo. The bound also
// keeps reading a list short: at most Max numbers, however it is written.
const Max = 8192

// Forms is the help text for a CPU list.
const Forms = "a Linux CPU list such as 4-19 or 0,2,4-7 (CPUs 0-8191)"

// Parse reads the kernel's list format by the rules in the package
// doc: ranges, no strides, no empty parts, no CPU twice, CPUs 0-8191, order
// kept. An empty (or blank) string is the empty list.
func Parse(s string) (List, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var out List
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil || a < 0 {
			return nil, fmt.Errorf("cpu list %q: %q is not a CPU number; use %s", s, part, Forms)
		}
		b := a
		if isRange {
			b, err = strconv.Atoi(strings.TrimSpace(hi))
			if err != nil || b < a {
				return nil, fmt.Errorf("cpu list %q: bad range %q; use %s", s, part, Forms)
			}
		}
		// Checked before the loop: it is what bounds the loop.
		if b >= Max {
			return nil, fmt.Errorf("cpu list %q: CPU %d is above %d, the highest CPU number Linux has", s, b, Max-1)
		}
		for c := a; c <= b; c++ {
			if seen[c] {
				return nil, fmt.Errorf("cpu list %q names CPU %d twice", s, c)
			}
			seen[c] = true
			out = append(out, c)
		}
	}
	return out, nil
}

// Must is Parse for constants in tests and tables.
func Must(s string) List {
	l, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return l
}

// Validate checks a list built in code (not parsed) as Parse would.
func (l List) Validate() error {
	seen := map[int]bool{}
	for _, c := range l {
		if c < 0 || c >= Max || seen[c] {
			return fmt.Errorf("%s: want distinct CPUs 0-%d", l, Max-1)
		}
		seen[c] = true
	}
	return nil
}

// String prints the list in the kernel's format, folding ascending runs
// into ranges.
func (l List) String() string {
	var b strings.Builder
	for i := 0; i < len(l); {
		j := i
		for j+1 < len(l) && l[j+1] == l[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(l[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(l[j]))
		}
		i = j + 1
	}
	return b.String()
}

// Set parses a flag value (pflag.Value).
func (l *List) Set(v string) error {
	p, err := Parse(v)
	if err != nil {
		return err
	}
	*l = p
	return nil
}

// Type names the flag's value in help text (pflag.Value).
func (l *List) Type() string { return "cpus" }

// UnmarshalJSON reads an array of CPU numbers, or a string in the list
// format (tuning snapshots written before the two list types became one).
func (l *List) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		p, err := Parse(s)
		if err != nil {
			return err
		}
		*l = p
		return nil
	}
	var n []int
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("cpu list: want an array of CPU numbers or a list such as \"0-3\": %w", err)
	}
	if err := List(n).Validate(); err != nil {
		return err
	}
	*l = n
	return nil
}

// The set operations treat a list as a set: order and repeats do not
// matter, and what they return is ascending.

// Sorted returns the CPUs in ascending order, each once.
func (l List) Sorted() List {
	out := slices.Clone(l)
	slices.Sort(out)
	return slices.Compact(out)
}

// Contains reports whether cpu is in the list.
func (l List) Contains(cpu int) bool { return slices.Contains(l, cpu) }

// Intersect returns the CPUs in both lists.
func (l List) Intersect(o List) List {
	return l.Sorted().keep(o.Sorted(), true)
}

// Minus returns the CPUs of l that are not in o.
func (l List) Minus(o List) List {
	return l.Sorted().keep(o.Sorted(), false)
}

// keep returns the CPUs of sorted l that are (in) or are not (!in) in sorted o.
func (l List) keep(o List, in bool) List {
	var out List
	for _, x := range l {
		if _, found := slices.BinarySearch(o, x); found == in {
			out = append(out, x)
		}
	}
	return out
}

// Union returns the CPUs in either list.
func (l List) Union(o List) List { return slices.Concat(l, o).Sorted() }

// Equal reports whether both lists hold the same CPUs, in any order.
func (l List) Equal(o List) bool { return slices.Equal(l.Sorted(), o.Sorted()) }
