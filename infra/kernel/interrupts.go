package kernel

import (
	"bufio"
	"errors"
	"io"
	"strconv"
	"strings"
)

// InterruptLine is one numbered line of /proc/interrupts.
type InterruptLine struct {
	IRQ  int
	Name string // the last column, the action's name
}

// ParseInterrupts reads /proc/interrupts and returns its numbered lines
// (architecture lines such as NMI and LOC carry no IRQ number and are
// skipped).
func ParseInterrupts(r io.Reader) ([]InterruptLine, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	if !sc.Scan() {
		return nil, errors.New("empty file")
	}
	ncpu := len(strings.Fields(sc.Text())) // header: CPU0 CPU1 ...
	var out []InterruptLine
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		num, err := strconv.Atoi(strings.TrimSuffix(fields[0], ":"))
		if err != nil || !strings.HasSuffix(fields[0], ":") {
			continue
		}
		// Counts, the chip, the hwirq and trigger ("81920 Edge" on ARM,
		// "1048576-edge" on x86), then the action's name. An IRQ whose
		// driver freed it (ENA's queues beyond a reduced count) has no name.
		name := ""
		if rest := fields[min(len(fields), 1+ncpu):]; len(rest) > 2 && !isTriggerField(rest[len(rest)-1]) {
			name = rest[len(rest)-1]
		}
		out = append(out, InterruptLine{IRQ: num, Name: name})
	}
	return out, sc.Err()
}

// isTriggerField reports whether a /proc/interrupts field is the trigger
// type column rather than a name.
func isTriggerField(f string) bool {
	l := strings.ToLower(f)
	return l == "edge" || l == "level" || strings.HasSuffix(l, "-edge") || strings.HasSuffix(l, "-level")
}
