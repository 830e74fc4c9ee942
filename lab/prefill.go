package lab

// PrefillBytes is what a prefill writes: every key at its size (the
// probe's keys too). Exact for one size and for keyspaces up to
// exactPrefillKeys; above, the keys times the mix's mean (each size's
// share of the keys is within 2 + ln N keys of its weight, SizeFor).
func PrefillBytes(w Workload) float64 {
	var b float64
	switch s, one := w.ValueSz.Single(); {
	case one:
		b = float64(w.Keyspace) * float64(s)
	case w.Keyspace <= exactPrefillKeys:
		for k := 0; k < w.Keyspace; k++ {
			b += float64(w.ValueSz.SizeFor(w.Seed, uint32(k)))
		}
	default:
		b = float64(w.Keyspace) * w.ValueSz.Mean()
	}
	if !w.Probe.IsZero() {
		b += ProbeKeys * float64(w.Probe.Size)
	}
	return b
}

// exactPrefillKeys bounds the keys PrefillBytes sums one by one (a few
// milliseconds).
const exactPrefillKeys = 1 << 20
