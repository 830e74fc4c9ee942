package fields

import (
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"

	"github.com/linerate/linerate/lab"
)

// Habits from other benchmarks that make linerate do something nobody
// meant. redis-benchmark's and memtier's -n is a request count; here it is
// the number of distinct keys, and a prefill of -n keys of -s bytes asks
// the server for n x s bytes of memory.

// LargeKeyspace is the -n above which large values (LargeKeyspaceValue
// and up) need --keyspace-large.
const (
	LargeKeyspace      = 100_000
	LargeKeyspaceValue = lab.Size(1 << 20)
)

// CheckKeyspaceHabit refuses a keyspace that looks like a request count:
// more than LargeKeyspace keys of LargeKeyspaceValue or more, unless the
// caller said it means it (--keyspace-large).
func CheckKeyspaceHabit(w lab.Workload, large bool) error {
	if large || w.Keyspace <= LargeKeyspace || w.ValueSz.Max() < LargeKeyspaceValue {
		return nil
	}
	return &FieldError{Field: "-n/--keyspace", Msg: fmt.Sprintf(
		"%d keys of %s (%s in all): -n is the number of distinct keys, not a request count (the run's length is -d); "+
			"add --keyspace-large if you mean %d distinct keys", w.Keyspace, w.ValueSz, humanBytes(int64(lab.PrefillBytes(w))), w.Keyspace)}
}

// CheckPrefillFits refuses a prefill whose bytes (keys x value size) exceed
// the server's maxmemory, when it has one, or this host's free memory,
// when the server is on this host (a loopback address). memAvailable reads
// the host's free memory (lab/fields reads no kernel file: its caller passes
// infra/kernel's); nil skips that check.
func CheckPrefillFits(w lab.Workload, si *lab.ServerInfo, memAvailable func() (int64, error)) error {
	need := int64(math.Min(lab.PrefillBytes(w), 1<<62))
	what := fmt.Sprintf("%d keys x %s = %s", w.Keyspace, w.ValueSz, humanBytes(need))
	if _, one := w.ValueSz.Single(); !one {
		what = fmt.Sprintf("%d keys of %s = %s", w.Keyspace, w.ValueSz, humanBytes(need))
	}
	if limit := maxmemory(si); limit > 0 && need > limit {
		return &FieldError{Field: "--prefill", Msg: fmt.Sprintf(
			"%s exceeds the server's maxmemory %s; lower -n or -s, or raise maxmemory", what, humanBytes(limit))}
	}
	if memAvailable == nil || !isLoopback(w.Host) {
		return nil
	}
	free, err := memAvailable()
	if err != nil {
		return nil // not knowing is not a reason to refuse
	}
	if need > free {
		return &FieldError{Field: "--prefill", Msg: fmt.Sprintf(
			"%s exceeds this host's free memory %s (MemAvailable), and the server is on this host; lower -n or -s", what, humanBytes(free))}
	}
	return nil
}

// maxmemory is the server's limit in bytes; 0 when it has none or did not
// say.
func maxmemory(si *lab.ServerInfo) int64 {
	if si == nil {
		return 0
	}
	for _, v := range []string{si.Config["maxmemory"], si.Info["maxmemory"]} {
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && n > 0 {
			return n
		}
	}
	return 0
}

func isLoopback(host string) bool {
	h := strings.Trim(host, "[]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// humanBytes is n in binary units for a message: 20 MiB, 6.1 TiB.
func humanBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	v, i := float64(n), 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), units[i])
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}
