package lab

// SumLive is the running totals of several runs at once (one cell's load
// from several client hosts): counts summed per phase and op. Its phase
// and server are the first's, its time the latest, and it is final when
// every run's is.
func SumLive(ls []*Live) *Live {
	out := &Live{Final: len(ls) > 0}
	for i, l := range ls {
		if l == nil {
			out.Final = false
			continue
		}
		if i == 0 || out.Phase == "" {
			out.Phase, out.Server = l.Phase, l.Server
		}
		if l.At.After(out.At) {
			out.At = l.At
		}
		out.Final = out.Final && l.Final
		for _, c := range l.Counts {
			m := out.Count(c.Phase, c.Op)
			if m == nil {
				out.Counts = append(out.Counts, LiveCount{Phase: c.Phase, Op: c.Op})
				m = &out.Counts[len(out.Counts)-1]
			}
			m.OK += c.OK
			m.Misses += c.Misses
			m.PayloadBytes += c.PayloadBytes
			m.LatencySum += c.LatencySum
			for k, n := range c.Errors {
				if m.Errors == nil {
					m.Errors = map[ErrorKind]uint64{}
				}
				m.Errors[k] += n
			}
			if len(m.Latency) < len(c.Latency) {
				m.Latency = append(m.Latency, make([]uint64, len(c.Latency)-len(m.Latency))...)
			}
			for b, n := range c.Latency {
				m.Latency[b] += n
			}
		}
	}
	return out
}
