package export

import (
	"strings"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/sweeps"
)

// Columns for how the record judges its figures: the open-loop
// accounting and verdict, the knee's floor, the size mix as the keyspace
// realized it, the probe's idle phase and its no-effect verdict, the
// MEMORY USAGE sample, and the edge bias of a window or a ramp step. Each
// view's come last, so the columns of older exports keep their places;
// each is empty where the cell did not measure it.

// The cell × op row's.
var judgedCellColumns = []column{
	col("due", Int, "open loop: requests the schedule meant to send in the window, every op: completed + failed + dropped + unsent", openLoop(func(o *lab.OpenLoopResult) any { return o.Due })),
	col("completed", Int, "open loop: of those, sent and answered without an error", openLoop(func(o *lab.OpenLoopResult) any { return o.Completed })),
	col("failed", Int, "open loop: of those, sent and failed (an error reply, a timeout, a reset connection, no answer by the drain's end)", openLoop(func(o *lab.OpenLoopResult) any { return o.Failed })),
	col("unsent", Int, "open loop: of those, never sent: still owed when the window ended", openLoop(func(o *lab.OpenLoopResult) any { return o.Unsent })),
	col("lateness_slope", Float, "open loop: the queue's growth, seconds of lateness gained per second of window (sustainable at most 0.01)", openLoop(func(o *lab.OpenLoopResult) any { return o.LatenessSlope })),
	col("not_sustainable_by", String, "open loop: the verdict's conditions that failed, joined by +: rate (achieved under 95 % of offered), queue (lateness_slope above 0.01), dropped; empty when sustainable", openLoop(func(o *lab.OpenLoopResult) any { return str(notSustainableBy(o)) })),

	col("knee_p50_ratio", Float, "ramp: the knee step's p50 over the floor step's", knee(func(k *lab.Knee) any { return k.P50Ratio })),
	col("knee_lateness_slope", Float, "ramp: the knee step's queue growth, seconds per second", knee(func(k *lab.Knee) any { return k.LatenessSlope })),
	col("knee_floor_step", Int, "ramp: the step the knee's latency ratios compare with (the lowest p99 of the ramp's first third), from 0; empty when none had a p99", knee(func(k *lab.Knee) any {
		if k.FloorStep < 0 || k.FloorP99 <= 0 {
			return nil
		}
		return int64(k.FloorStep)
	})),
	col("knee_floor_p99_ms", Float, "ramp: that floor step's p99, ms", knee(func(k *lab.Knee) any {
		if k.FloorStep < 0 || k.FloorP99 <= 0 {
			return nil
		}
		return ms(k.FloorP99)
	})),

	col("size_mix_mean_bytes", Float, "size mix: the keys' mean value size as the keyspace realized it, bytes (what a bit rate converts with; value_size_mean is the weights')", sizeMix(func(m *lab.RealizedMix) any { return m.Mean })),
	col("size_mix_strays", Bool, "size mix: some class's share of keys or bytes is more than 10 points from its weight (the run warned to raise -n)", sizeMix(func(m *lab.RealizedMix) any { return m.Strays() })),

	col("probe_idle_samples", Int, "probe: GETs its idle p99 rests on (at least 1000 unless probe_idle_short)", probe(func(p *lab.ProbeResult) any { return p.Idle.Count })),
	col("probe_idle_s", Float, "probe: how long it ran alone, seconds", probe(func(p *lab.ProbeResult) any {
		if p.IdleLength == 0 { // a record older than the idle phase's length
			return nil
		}
		return p.IdleLength.Seconds()
	})),
	col("probe_idle_short", Bool, "probe: its idle p99 rests on fewer than 1000 GETs", probe(func(p *lab.ProbeResult) any { return p.IdleShort })),
	col("probe_no_effect", Bool, "probe: the added p99's band holds 0: no measurable effect of the main load (probe_added_p99_ms is then 0)", probe(func(p *lab.ProbeResult) any {
		if p.Latency.Count == 0 || p.Idle.Count == 0 {
			return nil
		}
		return p.NoEffect
	})),

	col("memory_usage_keys", Int, "MEMORY USAGE: the keys sampled for memory_usage_bytes", memory(func(m *sweeps.MemoryRecord) any {
		if m.MemoryUsage == nil || m.MemoryUsage.Keys == 0 {
			return nil
		}
		return int64(m.MemoryUsage.Keys)
	})),

	col("edge_bias_by", String, "the op's latency that passed a tenth of the window (p99, or max when only the longest did): its ops/s, Gbps and mean latency count warmup requests whole; empty when none did", edgeBias(func(e *lab.EdgeBias) any { return e.By })),
	col("edge_bias_needs_s", Float, "the shortest window, seconds, that holds the op's longest request to a tenth of it", edgeBias(func(e *lab.EdgeBias) any { return e.Needs.Seconds() })),
}

// The ramp step row's.
var judgedStepColumns = []column{
	col("unsent", Int, "the step's requests never sent: still owed when the window ended", func(r *row) any { return r.step.Unsent }),
	col("lateness_slope", Float, "the queue's growth within the step, seconds per second", func(r *row) any { return r.step.LatenessSlope }),
	col("edge_bias", Bool, "the step's p99 passed a tenth of its length: its requests ran on into the next step; empty when nothing completed", func(r *row) any {
		if r.step.Latency == nil || r.step.Latency.Count == 0 {
			return nil
		}
		return lab.StepEdgeBiasOf(*r.step) != nil
	}),
	col("edge_bias_needs_s", Float, "the shortest step length, seconds, that holds its p99 to a tenth; empty without an edge bias", func(r *row) any {
		if e := lab.StepEdgeBiasOf(*r.step); e != nil {
			return e.Needs.Seconds()
		}
		return nil
	}),
}

// The size class row's: the class as the keyspace realized it.
var judgedSizeColumns = []column{
	col("size_class_keys", Int, "the keys of the class (of size_mix's counted keys)", realizedClass(func(c *lab.RealizedClass) any { return c.Keys })),
	col("size_class_key_share", Float, "their share of the keys, 0-1", realizedClass(func(c *lab.RealizedClass) any { return c.KeyShare })),
	col("size_class_asked_key_share", Float, "the share of keys the mix asked, 0-1", realizedClass(func(c *lab.RealizedClass) any { return c.AskedKeyShare })),
	col("size_class_byte_share", Float, "their share of the keys' bytes, 0-1", realizedClass(func(c *lab.RealizedClass) any { return c.ByteShare })),
	col("size_class_asked_byte_share", Float, "the share of bytes the mix asked, 0-1", realizedClass(func(c *lab.RealizedClass) any { return c.AskedByteShare })),
}

// notSustainableBy names the verdict's failed conditions as the record
// flags them, joined by "+".
func notSustainableBy(o *lab.OpenLoopResult) string {
	var by []string
	for _, p := range []struct {
		on   bool
		name string
	}{{o.ShortOfOffered, "rate"}, {o.QueueGrew, "queue"}, {o.Dropped > 0, "dropped"}} {
		if p.on {
			by = append(by, p.name)
		}
	}
	return strings.Join(by, "+")
}

func sizeMix(get func(m *lab.RealizedMix) any) func(r *row) any {
	return figure(func(r *row) any {
		if r.rec.Result.SizeMix == nil {
			return nil
		}
		return get(r.rec.Result.SizeMix)
	})
}

// edgeBias is the row's op's edge bias (lab.EdgeBiasOf: judged from the
// figures, so a record older than the judgement is judged too).
func edgeBias(get func(e *lab.EdgeBias) any) func(r *row) any {
	return figure(func(r *row) any {
		for _, e := range lab.EdgeBiasOf(r.rec.Result) {
			if e.Op == r.op {
				return get(&e)
			}
		}
		return nil
	})
}

func realizedClass(get func(c *lab.RealizedClass) any) func(r *row) any {
	return func(r *row) any {
		m := r.rec.Result.SizeMix
		if m == nil {
			return nil
		}
		for i := range m.Classes {
			if m.Classes[i].Class == r.size.Class {
				return get(&m.Classes[i])
			}
		}
		return nil
	}
}
