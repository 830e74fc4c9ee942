package infra

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ParseCPUList parses a Linux CPU list ("0-3,8,10-11") into sorted CPU
// numbers.
func ParseCPUList(s string) ([]int, error) {
	seen := map[int]bool{}
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("cpu list %q: bad cpu %q (accepted: 0-3,8)", s, part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("cpu list %q: bad range %q (accepted: 0-3,8)", s, part)
			}
		}
		if b-a > 4096 {
			return nil, fmt.Errorf("cpu list %q: range %q too large", s, part)
		}
		for c := a; c <= b; c++ {
			seen[c] = true
		}
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("cpu list %q: empty", s)
	}
	out := make([]int, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	sort.Ints(out)
	return out, nil
}

// FormatCPUList writes sorted CPUs in the kernel's compact form.
func FormatCPUList(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(cpus[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return b.String()
}
