package tuning

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// CPUSet is a sorted set of CPU numbers. Its text form is the kernel's list
// format ("0-3,8,10-11"), the form /proc/irq/N/smp_affinity_list, taskset -c
// and docker --cpuset-cpus all take, so a set prints the way it is written.
type CPUSet []int

// maxCPUs bounds CPU numbers, as lab.MaxCPUs does: 8192 is the most CPUs a
// kernel can be built for.
const maxCPUs = 8192

// ParseCPUSet reads the kernel's list format. Whitespace around the list is
// ignored; an empty string is the empty set.
func ParseCPUSet(s string) (CPUSet, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("bad CPU list %q: %q is not a CPU number or range like 0-3", s, part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("bad CPU list %q: %q is not a range like 0-3", s, part)
			}
		}
		// Checked before the loop, which it bounds: a range ending at the
		// largest int would never end.
		if b >= maxCPUs {
			return nil, fmt.Errorf("bad CPU list %q: CPU %d is above %d, the highest CPU number Linux has", s, b, maxCPUs-1)
		}
		for c := a; c <= b; c++ {
			seen[c] = true
		}
	}
	out := make(CPUSet, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	slices.Sort(out)
	return out, nil
}

// MustCPUSet is ParseCPUSet for constants in tests and tables.
func MustCPUSet(s string) CPUSet {
	c, err := ParseCPUSet(s)
	if err != nil {
		panic(err)
	}
	return c
}

// String renders the set in list format, collapsing runs into ranges.
func (c CPUSet) String() string {
	var b strings.Builder
	for i := 0; i < len(c); {
		j := i
		for j+1 < len(c) && c[j+1] == c[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(c[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(c[j]))
		}
		i = j + 1
	}
	return b.String()
}

// MarshalText keeps sets readable in JSON and YAML records.
func (c CPUSet) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText accepts the list format.
func (c *CPUSet) UnmarshalText(b []byte) error {
	s, err := ParseCPUSet(string(b))
	if err != nil {
		return err
	}
	*c = s
	return nil
}

// Contains reports whether cpu is in the set.
func (c CPUSet) Contains(cpu int) bool {
	_, ok := slices.BinarySearch(c, cpu)
	return ok
}

// Intersect returns the CPUs in both sets.
func (c CPUSet) Intersect(o CPUSet) CPUSet {
	var out CPUSet
	for _, x := range c {
		if o.Contains(x) {
			out = append(out, x)
		}
	}
	return out
}

// Minus returns the CPUs of c that are not in o.
func (c CPUSet) Minus(o CPUSet) CPUSet {
	var out CPUSet
	for _, x := range c {
		if !o.Contains(x) {
			out = append(out, x)
		}
	}
	return out
}

// Union returns the CPUs in either set.
func (c CPUSet) Union(o CPUSet) CPUSet {
	out := slices.Concat(c, o)
	slices.Sort(out)
	return slices.Compact(out)
}

// Equal reports whether both sets hold the same CPUs.
func (c CPUSet) Equal(o CPUSet) bool { return slices.Equal(c, o) }
