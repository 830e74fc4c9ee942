package export

import (
	"strings"

	"github.com/linerate/linerate/infra/nicstats"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/sweeps"
)

// Columns for what the record gained after the first export: open loop,
// ramps and their knee, value-size mixes, the collateral probe, memory per
// key, persistence, NIC counters, the link and several client hosts. Each
// is empty where the cell did not measure it (a closed-loop cell has no
// offered rate), so a closed-loop campaign's rows read as before with
// empty columns added.

// The paced and mixed-size workload fields, after the first workload
// columns so the columns of older exports keep their places.
var pacedWorkloadColumns = []column{
	col("clients", Int, "client hosts the load came from (clients: N); empty for a failed cell that left no record", func(r *row) any {
		if n := len(r.rec.Clients); n > 0 {
			return int64(n)
		}
		if r.rec.Result != nil {
			return int64(1)
		}
		return nil
	}),
	col("value_size_mean", Float, "mean value size of the mix, bytes (the size itself for one size)", func(r *row) any {
		if r.w.ValueSz.IsZero() {
			return nil
		}
		return round(r.w.ValueSz.Mean(), 1e3)
	}),
	col("rate", String, "--rate as given (300, 20Gbps); empty in closed loop", func(r *row) any { return str(r.w.Rate.String()) }),
	col("rate_ops_per_sec", Float, "--rate in requests/s (a bit rate over the keys' mean size)", func(r *row) any {
		if r.w.Rate.IsZero() {
			return nil
		}
		v, err := r.w.Rate.OpsPerSec(r.w.MeanValueBytes())
		if err != nil {
			return nil
		}
		return v
	}),
	col("ramp", String, "--ramp as given (50:800:8:10s); empty without a ramp", func(r *row) any { return str(r.w.Ramp.String()) }),
	col("ramp_steps", Int, "the ramp's steps", func(r *row) any { return positive(r.w.Ramp.Steps) }),
	col("arrival", String, "--arrival (constant, poisson); empty when nothing is paced", func(r *row) any { return str(r.w.Arrival.String()) }),
	col("queue_limit_s", Float, "--queue-limit, seconds; empty when nothing is paced", func(r *row) any {
		if r.w.QueueLimit == 0 {
			return nil
		}
		return r.w.QueueLimit.Seconds()
	}),
	col("probe", String, "--probe as given (100B@200); empty without a probe", func(r *row) any { return str(r.w.Probe.String()) }),
}

// The cell × op row's open-loop, probe, memory, persistence, NIC and link
// figures, after its first figures.
var pacedCellColumns = concat(
	[]column{
		col("offered_ops_per_sec", Float, "open loop: the schedule's rate, every op (a ramp: the mean of its steps)", openLoop(func(o *lab.OpenLoopResult) any { return o.Offered })),
		col("achieved_ops_per_sec", Float, "open loop: successful requests completed in the window per second, every op", openLoop(func(o *lab.OpenLoopResult) any { return o.Achieved })),
		col("sent", Int, "open loop: requests intended in the window that were sent, every op", openLoop(func(o *lab.OpenLoopResult) any { return o.Sent })),
		col("late", Int, "open loop: of those, sent more than 1 ms after their intended time", openLoop(func(o *lab.OpenLoopResult) any { return o.Late })),
		col("dropped", Int, "open loop: never sent, they would have waited past --queue-limit", openLoop(func(o *lab.OpenLoopResult) any { return o.Dropped })),
		col("sustainable", Bool, "open loop: the verdict: achieved at least 95 % of offered, the queue not growing, nothing dropped", openLoop(func(o *lab.OpenLoopResult) any { return o.Sustainable })),
	},
	summaryColumns("service_", "open loop: service time (from the real send)", func(r *row) *lab.LatencySummary { return r.o.Service }),
	[]column{
		col("knee_step", Int, "ramp: the first step that broke the knee rule, from 0; empty when none did", knee(func(k *lab.Knee) any { return int64(k.Step) })),
		col("knee_offered_ops_per_sec", Float, "ramp: that step's offered rate", knee(func(k *lab.Knee) any { return k.Offered })),
		col("knee_p99_ratio", Float, "ramp: that step's p99 over the floor step's (the lowest p99 of the ramp's first third)", knee(func(k *lab.Knee) any { return k.P99Ratio })),
		col("knee_achieved_ratio", Float, "ramp: that step's achieved over offered rate", knee(func(k *lab.Knee) any { return k.AchievedRatio })),
		col("knee_by", String, "ramp: which parts of the rule fired, joined by +: latency (p99), p50, queue, rate", knee(func(k *lab.Knee) any { return str(k.By()) })),

		col("probe_p50_ms", Float, "probe: p50 under the main load, ms, from the intended send time", probeMs(func(p *lab.ProbeResult) (lab.LatencySummary, float64) { return p.Latency, p.Latency.P50 })),
		col("probe_p99_ms", Float, "probe: p99 under the main load, ms", probeMs(func(p *lab.ProbeResult) (lab.LatencySummary, float64) { return p.Latency, p.Latency.P99 })),
		col("probe_service_p99_ms", Float, "probe: p99 under the main load from the real send, ms", probeMs(func(p *lab.ProbeResult) (lab.LatencySummary, float64) { return p.Service, p.Service.P99 })),
		col("probe_idle_p99_ms", Float, "probe: p99 alone (in the warmup), ms", probeMs(func(p *lab.ProbeResult) (lab.LatencySummary, float64) { return p.Idle, p.Idle.P99 })),
		col("probe_added_p99_ms", Float, "probe: what the main load added to its p99 (under load − idle), ms", probeAdded(func(p *lab.ProbeResult) float64 { return p.AddedP99 })),
		col("probe_added_p99_low_ms", Float, "probe: the added p99's 95 % band, low end, ms", probeAdded(func(p *lab.ProbeResult) float64 { return p.AddedLow })),
		col("probe_added_p99_high_ms", Float, "probe: the added p99's 95 % band, high end, ms", probeAdded(func(p *lab.ProbeResult) float64 { return p.AddedHigh })),
		col("probe_ops", Int, "probe: GETs completed in the window", probe(func(p *lab.ProbeResult) any { return p.Ops })),
		col("probe_errors", Int, "probe: GETs failed in the window", probe(func(p *lab.ProbeResult) any { return p.Errors })),
		col("probe_late", Int, "probe: GETs sent more than 1 ms late", probe(func(p *lab.ProbeResult) any { return p.Late })),
		col("probe_dropped", Int, "probe: GETs never sent (past --queue-limit)", probe(func(p *lab.ProbeResult) any { return p.Dropped })),

		col("bytes_per_key", Float, "server memory per key: Δused_memory / Δkeys, the bench's connections closed; empty when not measurable", memory(func(m *sweeps.MemoryRecord) any { return measuredKey(m, m.BytesPerKey) })),
		col("bytes_per_key_from", String, "cell (before the prefill to after the cell, settled); prefill in older records", memory(func(m *sweeps.MemoryRecord) any { return str(m.BytesPerKeyFrom) })),
		col("memory_overhead", Float, "bytes_per_key over the (mean) value size, minus 1", memory(func(m *sweeps.MemoryRecord) any { return measuredKey(m, m.Overhead) })),
		col("memory_not_measurable", String, "why bytes_per_key is empty (keys there before, no key added, memory that did not grow, a server that did not settle)", memory(func(m *sweeps.MemoryRecord) any { return str(m.NotMeasurable) })),
		col("memory_usage_bytes", Float, "MEMORY USAGE of a sample of the keys after the cell, mean bytes a key: the server's own count beside bytes_per_key", memory(func(m *sweeps.MemoryRecord) any {
			if m.MemoryUsage == nil || m.MemoryUsage.Keys == 0 {
				return nil
			}
			return m.MemoryUsage.MeanBytes
		})),

		col("forks", Int, "persistence: forks begun in the window (sum of its seconds'); 0 when none began; empty where the server does not count them", persistence(func(ps []sweeps.PersistenceSecond) any {
			if n := sweeps.ForksIn(ps); n != nil {
				return *n
			}
			return nil
		})),
		col("bgsaves", Int, "persistence: BGSAVEs the runner asked for while the bench ran (server.bgsave-every, or persistence rdb); empty when it asked for none", done(func(r *row) any {
			return positive(r.rec.BGSaves)
		})),
		col("persistence_note", String, "persistence: why a cell that persists began no fork in its window (then forks is 0), or a BGSAVE that failed", done(func(r *row) any {
			return str(r.rec.PersistenceNote)
		})),
		col("latest_fork_ms", Float, "persistence: the longest latest_fork_usec the window's reads saw, ms", persistence(func(ps []sweeps.PersistenceSecond) any {
			var most int64
			for _, s := range ps {
				most = max(most, s.LatestForkUsec)
			}
			return ms(float64(most))
		})),
		col("bgsave_seconds", Int, "persistence: seconds of the window with an RDB snapshot running", persistence(func(ps []sweeps.PersistenceSecond) any {
			return count(ps, func(s sweeps.PersistenceSecond) bool { return s.RDBBgsaveInProgress })
		})),
		col("aof_rewrite_seconds", Int, "persistence: seconds of the window with an AOF rewrite running", persistence(func(ps []sweeps.PersistenceSecond) any {
			return count(ps, func(s sweeps.PersistenceSecond) bool { return s.AOFRewriteInProgress })
		})),

		col("nic_allowance_exceeded", Int, "NIC: the rise of every *allowance_exceeded counter, every host; 0 watched and unmoved; empty when no NIC was read", nic(func(ds []sweeps.NICDelta) any {
			return nicSum(ds, true)
		})),
		col("nic_allowances", String, "NIC: each allowance counter that rose: host interface counter +rise, joined by ; ", nic(func(ds []sweeps.NICDelta) any {
			return str(strings.Join(sweeps.Allowances(ds), "; "))
		})),
		col("nic_drops_errors", Int, "NIC: the rise of the other watched counters (drops, discards, timeouts, errors), every host", nic(func(ds []sweeps.NICDelta) any {
			return nicSum(ds, false)
		})),

		col("link_gbps", Float, "env.json link: N-flow Gbps on the wire in the op's direction (the ceiling the limit label uses)", link(func(l *sweeps.Link, op lab.Op) any { return l.Ceiling(op) })),
		col("link_per_flow_gbps", Float, "env.json link: one connection's Gbps on the wire in the op's direction", link(func(l *sweeps.Link, op lab.Op) any {
			if op == lab.OpSet {
				return l.SET.PerFlowGbps
			}
			return l.GET.PerFlowGbps
		})),
	},
)

// The cell × op × second row's probe and persistence figures, after its
// first ones.
var pacedSeriesColumns = []column{
	col("probe_ops", Int, "probe: GETs completed in that second", probeSecond(func(s *lab.ProbeSecond) any { return s.Ops })),
	col("probe_p99_ms", Float, "probe: that second's p99, ms, within ±5%", probeSecond(func(s *lab.ProbeSecond) any {
		if s.Ops == 0 || s.P99 <= 0 {
			return nil
		}
		return ms(s.P99)
	})),
	col("forks", Int, "persistence: forks begun in that second; empty when no read fell in it", persistenceSecond(func(s *sweeps.PersistenceSecond) any {
		if s.Forks == nil {
			return nil
		}
		return *s.Forks
	})),
	col("bgsave", Bool, "persistence: an RDB snapshot ran in that second", persistenceSecond(func(s *sweeps.PersistenceSecond) any { return s.RDBBgsaveInProgress })),
	col("aof_rewrite", Bool, "persistence: an AOF rewrite ran in that second", persistenceSecond(func(s *sweeps.PersistenceSecond) any { return s.AOFRewriteInProgress })),
}

// summaryColumns are a latency summary's percentiles in ms, prefix_p50_ms …
func summaryColumns(prefix, what string, pick func(r *row) *lab.LatencySummary) []column {
	at := func(get func(l *lab.LatencySummary) float64) func(r *row) any {
		return figure(func(r *row) any {
			l := pick(r)
			if l == nil || l.Count == 0 {
				return nil
			}
			return ms(get(l))
		})
	}
	return []column{
		col(prefix+"p50_ms", Float, what+" p50, ms", at(func(l *lab.LatencySummary) float64 { return l.P50 })),
		col(prefix+"p90_ms", Float, what+" p90, ms", at(func(l *lab.LatencySummary) float64 { return l.P90 })),
		col(prefix+"p95_ms", Float, what+" p95, ms", at(func(l *lab.LatencySummary) float64 { return l.P95 })),
		col(prefix+"p99_ms", Float, what+" p99, ms", at(func(l *lab.LatencySummary) float64 { return l.P99 })),
		col(prefix+"p99_9_ms", Float, what+" p99.9, ms", at(func(l *lab.LatencySummary) float64 { return l.P999 })),
		col(prefix+"max_ms", Float, what+" max, ms", at(func(l *lab.LatencySummary) float64 { return l.Max })),
	}
}

func concat(parts ...[]column) []column {
	var out []column
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func openLoop(get func(o *lab.OpenLoopResult) any) func(r *row) any {
	return figure(func(r *row) any {
		if r.rec.Result.OpenLoop == nil {
			return nil
		}
		return get(r.rec.Result.OpenLoop)
	})
}

func knee(get func(k *lab.Knee) any) func(r *row) any {
	return figure(func(r *row) any {
		if r.rec.Result.Knee == nil {
			return nil
		}
		return get(r.rec.Result.Knee)
	})
}

func probe(get func(p *lab.ProbeResult) any) func(r *row) any {
	return figure(func(r *row) any {
		if r.rec.Result.Probe == nil {
			return nil
		}
		return get(r.rec.Result.Probe)
	})
}

// probeMs is a probe percentile in ms; empty when its summary counted none.
func probeMs(pick func(p *lab.ProbeResult) (lab.LatencySummary, float64)) func(r *row) any {
	return probe(func(p *lab.ProbeResult) any {
		l, v := pick(p)
		if l.Count == 0 {
			return nil
		}
		return ms(v)
	})
}

// probeAdded is a figure of the added p99, which needs both p99s.
func probeAdded(get func(p *lab.ProbeResult) float64) func(r *row) any {
	return probe(func(p *lab.ProbeResult) any {
		if p.Latency.Count == 0 || p.Idle.Count == 0 {
			return nil
		}
		return ms(get(p))
	})
}

func memory(get func(m *sweeps.MemoryRecord) any) func(r *row) any {
	return done(func(r *row) any {
		if r.rec.Memory == nil {
			return nil
		}
		return get(r.rec.Memory)
	})
}

func persistence(get func(ps []sweeps.PersistenceSecond) any) func(r *row) any {
	return done(func(r *row) any {
		if len(r.rec.Persistence) == 0 {
			return nil
		}
		return get(r.rec.Persistence)
	})
}

// measuredKey is a per-key figure, or nil when the record measured none.
func measuredKey(m *sweeps.MemoryRecord, v float64) any {
	if m.BytesPerKey <= 0 {
		return nil
	}
	return v
}

func count(ps []sweeps.PersistenceSecond, yes func(sweeps.PersistenceSecond) bool) int64 {
	var n int64
	for _, s := range ps {
		if yes(s) {
			n++
		}
	}
	return n
}

func nic(get func(ds []sweeps.NICDelta) any) func(r *row) any {
	return done(func(r *row) any {
		var read []sweeps.NICDelta
		for _, d := range r.rec.NIC {
			if d.Error == "" {
				read = append(read, d)
			}
		}
		if len(read) == 0 {
			return nil
		}
		return get(read)
	})
}

// nicSum adds the rises of the allowance counters (allowance) or of every
// other watched counter.
func nicSum(ds []sweeps.NICDelta, allowance bool) uint64 {
	var n uint64
	for _, d := range ds {
		for name, v := range d.Counters {
			if nicstats.IsAllowance(name) == allowance {
				n += v
			}
		}
	}
	return n
}

func link(get func(l *sweeps.Link, op lab.Op) any) func(r *row) any {
	return done(func(r *row) any {
		if r.env == nil || r.env.Link == nil {
			return nil
		}
		return get(r.env.Link, r.op)
	})
}

func probeSecond(get func(s *lab.ProbeSecond) any) func(r *row) any {
	return func(r *row) any {
		p := r.rec.Result.Probe
		if p == nil {
			return nil
		}
		for i := range p.Series {
			if p.Series[i].Second == r.sec.Second {
				return get(&p.Series[i])
			}
		}
		return nil
	}
}

func persistenceSecond(get func(s *sweeps.PersistenceSecond) any) func(r *row) any {
	return func(r *row) any {
		for i := range r.rec.Persistence {
			if r.rec.Persistence[i].Second == r.sec.Second {
				return get(&r.rec.Persistence[i])
			}
		}
		return nil
	}
}
