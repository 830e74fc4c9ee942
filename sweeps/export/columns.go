package export

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/fields"
	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/hostmetrics"
)

// Kind is a column's type: how a CSV cell parses and what JSON value an
// NDJSON field holds. An empty CSV cell or a JSON null is "not measured".
type Kind string

const (
	String Kind = "string"
	Int    Kind = "int"
	Float  Kind = "float"
	Bool   Kind = "bool"
)

// Column is one field of every row, in order.
type Column struct {
	Name string `json:"name"`
	Kind Kind   `json:"kind"`
	Doc  string `json:"doc"`
}

// row is what one row is built from.
type row struct {
	rec *sweeps.CellRecord
	w   lab.Workload // as run when there is a result, else as planned
	op  lab.Op
	// o is the op's figures; nil for a failed cell or an op with no figures.
	o    *lab.OpResult
	sec  *lab.SecondSample // series rows only
	step *lab.StepResult   // step rows only
	size *lab.SizeResult   // size rows only
	// env is the run's env.json (the link); nil when it has none.
	env *sweeps.Environment
}

type column struct {
	Column
	get func(r *row) any // string, int64, uint64, float64, bool, or nil
}

func col(name string, k Kind, doc string, get func(r *row) any) column {
	if k == Float {
		get = measured(name, get)
	}
	return column{Column{name, k, doc}, get}
}

// sigFigs is how many significant digits a float column other than a
// latency keeps: as many as a byte count below 10 GB has (a mean value
// size, bytes per key), more than any rate, ratio or CPU figure of a
// record is measured to, and fewer than float64's binary noise, which
// starts at the 16th (17.798000000000002).
const sigFigs = 10

// measured rounds a float column's value to the precision it was
// measured at, so it prints as its shortest form: a latency (_ms) to the
// microsecond, the histograms' unit; anything else to sigFigs
// significant digits.
func measured(name string, get func(r *row) any) func(r *row) any {
	ms := strings.HasSuffix(name, "_ms")
	return func(r *row) any {
		v := get(r)
		f, ok := v.(float64)
		if !ok || math.IsNaN(f) || math.IsInf(f, 0) || f == 0 {
			return v
		}
		if ms {
			return round(f, 1e3)
		}
		f, _ = strconv.ParseFloat(strconv.FormatFloat(f, 'g', sigFigs, 64), 64)
		return f
	}
}

// Identity and workload: the same in both exports.
var prefixColumns = []column{
	col("campaign", String, "campaign name", func(r *row) any { return str(r.rec.Campaign) }),
	col("version", String, "the server version as in cell IDs (valkey-9.1.2)", func(r *row) any { return str(r.rec.Version.Segment) }),
	col("server", String, "valkey or redis, as the server said (else as resolved)", func(r *row) any { n, _ := serverOf(r.rec); return str(n) }),
	col("server_version", String, "the server's version, as it said (else as resolved)", func(r *row) any { _, v := serverOf(r.rec); return str(v) }),
	col("runtime", String, "the store runtime the version ran on (sid, trixie)", func(r *row) any { return str(r.rec.Version.Runtime) }),
	col("version_label", String, "the version as the campaign names it (valkey@9.1)", func(r *row) any { return str(r.rec.Version.Label) }),
	col("cell_id", String, "the cell (version/op/size/.../rN)", func(r *row) any { return str(r.rec.CellID) }),
	col("cell_key", String, "the cell without version and repetition: the same for every version", func(r *row) any { return str(r.rec.Key) }),
	col("rep", Int, "repetition, from 1", func(r *row) any { return int64(r.rec.Rep) }),
	col("op", String, "GET or SET; MGET or MSET with --command; empty on a step row of a mixed cell (a step holds every op)", func(r *row) any { return str(string(r.op)) }),
	col("value_size", Int, "value size, bytes; empty for a mix of sizes", func(r *row) any {
		if s, one := r.w.ValueSz.Single(); one {
			return int64(s)
		}
		return nil
	}),
	col("value_size_text", String, "value size as people write it (16MiB; a mix as -s takes it, 1MiB:60,16MiB:40)", func(r *row) any { return r.w.ValueSz.String() }),
	col("connections", Int, "-c", func(r *row) any { return int64(r.w.Connections) }),
	col("pipeline", Int, "-P", func(r *row) any { return int64(r.w.Pipeline) }),
	col("threads", Int, "-t; empty when the plan left it to the client host and no record says", func(r *row) any { return positive(r.w.Threads) }),
	col("cpu_list", String, "--cpu-list", func(r *row) any { return str(r.w.CPUList.String()) }),
	col("keyspace", Int, "-n", func(r *row) any { return int64(r.w.Keyspace) }),
	col("key_size", Int, "--key-size", func(r *row) any { return int64(r.w.KeySize) }),
	col("ratio_get", Int, "-r, the GET weight", func(r *row) any { return int64(r.w.Ratio.Gets) }),
	col("ratio_set", Int, "-r, the SET weight", func(r *row) any { return int64(r.w.Ratio.Sets) }),
	col("key_dist", String, "--key-dist (uniform, sequential, zipf:0.9, gaussian:0.5,0.1)", func(r *row) any { return str(r.w.KeyDist.String()) }),
	col("prefill", Bool, "--prefill", func(r *row) any { return r.w.Prefill }),
	col("warmup_s", Float, "--warmup, seconds", func(r *row) any { return r.w.Warmup.Seconds() }),
	col("duration_s", Float, "-d, seconds", func(r *row) any { return r.w.Duration.Seconds() }),
	col("request_timeout_s", Float, "--request-timeout, seconds", func(r *row) any { return r.w.RequestTimeout.Seconds() }),
	col("verify", String, "--verify", func(r *row) any { return str(string(r.w.Verify)) }),
	col("seed", Int, "--seed", func(r *row) any { return r.w.Seed }),
	col("engine", String, "--engine", func(r *row) any { return str(r.w.Engine) }),
	col("user", String, "--user (ACL user); empty for none", func(r *row) any { return str(r.w.User) }),
	col("keys_per_op", Int, "--keys-per-op: keys of each MGET or MSET (its ops are requests, its payload their values); empty for GET and SET", func(r *row) any { return positive(r.w.KeysPerOp) }),
}

// The cell × op export: outcome, figures, cost.
var cellColumns = []column{
	col("status", String, "done or failed", func(r *row) any { return string(r.rec.Status) }),
	col("reason", String, "why the cell failed", func(r *row) any { return str(r.rec.Reason) }),
	col("attempts", Int, "attempts so far", func(r *row) any { return int64(r.rec.Attempts) }),
	col("started", String, "when the last attempt started, RFC 3339 UTC", func(r *row) any { return stamp(r.rec.Started) }),
	col("stop_reason", String, "how the bench ended (completed, server_lost …)", func(r *row) any {
		if r.rec.Result == nil {
			return nil
		}
		return str(string(r.rec.Result.Stop.Reason))
	}),
	// Figures: empty for a failed cell, so no sum or mean takes one in.
	col("limit", String, "what most likely ran out (server-main, server-io, client, link, page-faults, host-cpu, unclear)", done(func(r *row) any {
		if r.rec.Limit == nil {
			return nil
		}
		return str(string(r.rec.Limit.Kind))
	})),
	col("limit_detail", String, "the limit label's reason", done(func(r *row) any {
		if r.rec.Limit == nil {
			return nil
		}
		return str(r.rec.Limit.Detail)
	})),
	col("client_limited", Bool, "the client ran out first: not the server's figure", done(func(r *row) any { return r.rec.ClientLimited })),
	col("measured_s", Float, "the measured window, seconds", figure(func(r *row) any { return r.rec.Result.Window.Measured.Seconds() })),
	col("ops", Int, "successful requests in the window", figure(func(r *row) any { return r.o.Ops })),
	col("ops_per_sec", Float, "ops over the window", figure(func(r *row) any { return r.o.OpsPerSec })),
	col("gbps", Float, "payload Gbit/s (value bytes of successful requests)", figure(func(r *row) any { return r.o.Gbps })),
	col("payload_bytes", Int, "value bytes of successful requests", figure(func(r *row) any { return r.o.PayloadBytes })),
	col("errors", Int, "failed requests in the window", figure(func(r *row) any { return sumErrors(r.o.Errors) })),
	col("p50_ms", Float, "latency p50, ms (first byte sent to last byte received)", latency(func(l lab.LatencySummary) float64 { return l.P50 })),
	col("p90_ms", Float, "latency p90, ms", latency(func(l lab.LatencySummary) float64 { return l.P90 })),
	col("p95_ms", Float, "latency p95, ms (the histogram's, also in records older than the p95 field)", figure(func(r *row) any { return p95(r.o.Latency) })),
	col("p99_ms", Float, "latency p99, ms", latency(func(l lab.LatencySummary) float64 { return l.P99 })),
	col("p99_9_ms", Float, "latency p99.9, ms", latency(func(l lab.LatencySummary) float64 { return l.P999 })),
	col("max_ms", Float, "latency max, ms", latency(func(l lab.LatencySummary) float64 { return l.Max })),
	col("mean_ms", Float, "latency mean, ms", latency(func(l lab.LatencySummary) float64 { return l.Mean })),
	col("ttfb_p99_ms", Float, "GET: time to first byte p99, ms", figure(func(r *row) any {
		if r.o.TTFB == nil || r.o.TTFB.Count == 0 {
			return nil
		}
		return ms(r.o.TTFB.P99)
	})),
	// The cell's cost, the same on each of its ops' rows.
	col("client_cpu_s", Float, "client process CPU over the window, seconds (whole cell)", figure(func(r *row) any {
		c := r.rec.Result.Client
		return round(c.ProcessUserSec+c.ProcessSysSec, 1e6)
	})),
	col("client_cpu_s_per_gb", Float, "client CPU seconds per GB of payload (whole cell)", figure(func(r *row) any { return r.rec.Result.Client.CPUSecPerGB })),
	col("client_max_worker_busy", Float, "busiest client worker, fraction of one CPU; empty for valkey-go", figure(func(r *row) any {
		c := r.rec.Result.Client
		if len(c.Workers) == 0 {
			return nil
		}
		return busy(c.MaxWorkerBusy)
	})),
	col("server_main_busy", Float, "server main thread, fraction of one CPU", server(func(p *hostmetrics.ProcWindow) any { return busy(p.MainBusy) })),
	col("server_io_threads", Int, "server I/O threads seen", server(func(p *hostmetrics.ProcWindow) any { return int64(p.IOThreads) })),
	col("server_io_busy", Float, "server I/O threads together, CPUs", server(func(p *hostmetrics.ProcWindow) any { return busy(p.IOBusyMean * float64(p.IOThreads)) })),
	col("server_io_busy_max", Float, "busiest server I/O thread, fraction of one CPU", server(func(p *hostmetrics.ProcWindow) any { return busy(p.IOBusyMax) })),
	col("server_other_busy", Float, "the server's other threads together (bio, jemalloc), CPUs", server(func(p *hostmetrics.ProcWindow) any { return busy(otherBusy(p)) })),
	col("server_minor_faults_per_op", Float, "server minor page faults per request (a cluster's: every node's)", figure(func(r *row) any {
		ps := r.rec.Host.Processes()
		if len(ps) == 0 {
			return nil
		}
		// Each node's figure is its faults over all the cell's requests.
		var sum float64
		for _, p := range ps {
			sum += p.MinorFaultsPerOp
		}
		return sum
	})),
}

// The cell × op × second export.
var seriesColumns = []column{
	col("second", Int, "second of the measured window, from 0", func(r *row) any { return int64(r.sec.Second) }),
	col("ops", Int, "successful requests completed in that second", func(r *row) any { return r.sec.Ops }),
	col("payload_bytes", Int, "their value bytes", func(r *row) any { return r.sec.PayloadBytes }),
	col("gbps", Float, "payload Gbit/s in that second (the last one: over the part measured)", func(r *row) any { return r.sec.Gbps }),
	col("errors", Int, "failed requests in that second", func(r *row) any { return r.sec.Errors }),
	col("p99_ms", Float, "that second's p99 latency, ms, within ±5%; empty when nothing completed", func(r *row) any {
		if r.sec.Ops == 0 || r.sec.P99 <= 0 {
			return nil
		}
		return ms(r.sec.P99)
	}),
}

// done leaves a failed cell's column empty.
func done(get func(r *row) any) func(r *row) any {
	return func(r *row) any {
		if r.rec.Status != sweeps.StatusDone {
			return nil
		}
		return get(r)
	}
}

// figure is a done cell's figure for the op; empty without one.
func figure(get func(r *row) any) func(r *row) any {
	return done(func(r *row) any {
		if r.o == nil || r.rec.Result == nil {
			return nil
		}
		return get(r)
	})
}

// latency is a percentile in ms; empty when nothing completed.
func latency(pick func(lab.LatencySummary) float64) func(r *row) any {
	return figure(func(r *row) any {
		if r.o.Latency.Count == 0 {
			return nil
		}
		return ms(pick(r.o.Latency))
	})
}

// server is a figure of the server process over the window: a cluster's
// busiest node (server.cluster: N), the one its limit label judged.
func server(get func(p *hostmetrics.ProcWindow) any) func(r *row) any {
	return figure(func(r *row) any {
		p := r.rec.Host.Busiest()
		if p == nil {
			return nil
		}
		return get(p)
	})
}

func str(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func positive(n int) any {
	if n <= 0 {
		return nil
	}
	return int64(n)
}

func stamp(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// ms turns microseconds into milliseconds (col rounds them to the
// microsecond).
func ms(us float64) float64 { return us / 1000 }

// busy rounds a CPU fraction to 0.01% of a CPU.
func busy(f float64) float64 { return round(f, 1e4) }

// round rounds x to 1/per: a sum of two rounded figures prints as 2.087,
// not 2.0869999999999997.
func round(x, per float64) float64 { return math.Round(x*per) / per }

func p95(l lab.LatencySummary) any {
	if l.Count == 0 {
		return nil
	}
	v, err := l.At(95) // the field, or the histogram of a record older than it
	if err != nil {
		return nil
	}
	return ms(v)
}

func sumErrors(m map[lab.ErrorKind]uint64) uint64 {
	var n uint64
	for _, v := range m {
		n += v
	}
	return n
}

func otherBusy(p *hostmetrics.ProcWindow) float64 {
	var sum float64
	for _, t := range p.Threads {
		if t.TID != p.PID && !hostmetrics.IsIOThread(t.Name) {
			sum += t.Busy
		}
	}
	return sum
}

// serverOf names the server as it said it was, else as it was resolved.
func serverOf(rec *sweeps.CellRecord) (name, version string) {
	if r := rec.Result; r != nil && r.Server != nil && r.Server.Version != "" {
		return r.Server.Name, r.Server.Version
	}
	if v := rec.Version.Resolved; v != nil {
		return v.Name, v.Version
	}
	return "", ""
}

// registryColumns is a column for each registry field that names one the
// columns above do not have: its value as its flag takes it, so a field
// added to lab/fields is exported without an entry here.
func registryColumns(have ...[]column) []column {
	var out []column
	for _, f := range fields.Registry {
		for _, name := range strings.Split(f.Column, ",") {
			if name == "" || slices.ContainsFunc(slices.Concat(have...), func(c column) bool { return c.Name == name }) {
				continue
			}
			out = append(out, col(name, String, f.Meaning, func(r *row) any { return str(f.Format(f.Get(r.w))) }))
		}
	}
	return out
}
