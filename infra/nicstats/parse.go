package nicstats

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// MaxCounters bounds what one interface may report. ETHTOOL_GSTRINGS has
// no limit of its own; 32768 is far above any driver (ENA with 32 queues
// lists about 1,100) and what the ethtool library reads at most.
const MaxCounters = 32768

// ParseEthtoolS reads the text of `ethtool -S IFNAME`: a "NIC statistics:"
// line, then one "name: value" per line. It is the format of fixtures and of
// hosts whose counters come back as command output. A name listed twice
// keeps its last value, as a read through the ioctl does.
func ParseEthtoolS(r io.Reader) (Counters, error) {
	c := Counters{}
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasSuffix(text, ":") { // the heading
			continue
		}
		i := strings.LastIndex(text, ": ")
		if i <= 0 {
			return nil, fmt.Errorf("ethtool -S line %d: %q is not \"name: value\"", line, text)
		}
		name, value := strings.TrimSpace(text[:i]), strings.TrimSpace(text[i+2:])
		v, err := strconv.ParseUint(value, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("ethtool -S line %d: counter %s: %q is not a count", line, name, value)
		}
		if _, dup := c[name]; !dup && len(c) == MaxCounters {
			return nil, fmt.Errorf("ethtool -S line %d: more than %d counters", line, MaxCounters)
		}
		c[name] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("ethtool -S: %w", err)
	}
	return c, nil
}
