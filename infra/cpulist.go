package infra

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/linerate/linerate/lab"
)

// ParseCPUList parses a Linux CPU list ("0-3,8,10-11") into sorted CPU
// numbers. It is lab's bounded parser (CPUs below lab.MaxCPUs, none twice),
// sorted, and an empty list is an error here.
func ParseCPUList(s string) ([]int, error) {
	l, err := lab.ParseCPUList(s)
	if err != nil {
		return nil, err
	}
	if len(l) == 0 {
		return nil, fmt.Errorf("cpu list %q: empty", s)
	}
	out := []int(l)
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
