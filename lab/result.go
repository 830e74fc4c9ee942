package lab

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// SchemaVersion names the layout of Result; docs/result-schema.md describes it.
// Bump it on any change a reader must know about. v2 added durations in
// seconds beside the strings (seconds.go).
const SchemaVersion = "linerate.bench/v2"

// SchemaV1 is the layout before v2; v2 only added fields, so it reads alike.
const SchemaV1 = "linerate.bench/v1"

// ReadsSchema says whether this linerate reads records of layout s.
func ReadsSchema(s string) bool { return s == SchemaVersion || s == SchemaV1 }

// Result is the record of one bench run. Optional parts are pointers or
// omitted maps: absent means "not measured", never zero.
type Result struct {
	Schema   string      `json:"schema"`
	RunID    string      `json:"run_id"`
	Linerate BuildInfo   `json:"linerate"`
	Started  time.Time   `json:"started"`
	Ended    time.Time   `json:"ended"`
	Given    []string    `json:"workload_given"` // the command line as typed
	Workload Workload    `json:"workload"`       // as resolved and run
	Server   *ServerInfo `json:"server,omitempty"`

	// Window is the measured window as it really ran: it can end early.
	Window Window `json:"window"`

	// Ops holds the measured window's figures per operation in the mix.
	Ops map[Op]*OpResult `json:"ops"`
	// Phases counts every request of the run, all phases, for cross-checks
	// against server counters.
	Phases map[Phase]*PhaseTotals `json:"phases"`

	Errors map[ErrorKind]uint64 `json:"errors"` // every phase of the run
	// Abandoned counts requests cut off unanswered: still in flight when
	// the run ended (drain deadline or Ctrl-C), or queued behind a request
	// that timed out on the connection that was reset for it; they are
	// neither throughput nor errors.
	Abandoned uint64      `json:"abandoned"`
	Engine    EngineInfo  `json:"engine"`
	Client    ClientUsage `json:"client"`
	Stop      Stop        `json:"stop"`
	Notes     []string    `json:"notes,omitempty"` // e.g. "client-limited: worker 3 at 98% CPU"
	// EdgeBias lists the ops whose requests were too long for the window
	// (edgebias.go): their figures count warmup requests; absent when none.
	EdgeBias []EdgeBias `json:"edge_bias,omitempty"`

	// Open loop and the probe (openloop_result.go): absent
	// unless the run paced something.
	OpenLoop *OpenLoopResult `json:"open_loop,omitempty"` // --rate or --ramp
	Steps    []StepResult    `json:"steps,omitempty"`     // --ramp: one per step
	Knee     *Knee           `json:"knee,omitempty"`      // --ramp: where it stopped keeping up
	Probe    *ProbeResult    `json:"probe,omitempty"`     // --probe
	// SizeMix is a mix of sizes as the keyspace realized it, beside the
	// shares asked (sizemix_realized.go); absent for one size.
	SizeMix *RealizedMix `json:"size_mix,omitempty"`

	// Cluster is the cluster the run was routed over (bench --cluster);
	// absent otherwise.
	Cluster *ClusterRun `json:"cluster,omitempty"`
}

// CheckNulls refuses a record read from disk that holds JSON null where
// a figure belongs (an op's or a phase's entry), naming each: records on
// disk are untrusted input, and every reader ranges over these maps. A
// record linerate wrote never has one.
func (r *Result) CheckNulls() error {
	var null []string
	for op, o := range r.Ops {
		if o == nil {
			null = append(null, "ops."+string(op))
		}
	}
	for ph, p := range r.Phases {
		if p == nil {
			null = append(null, "phases."+string(ph))
		}
	}
	if len(null) == 0 {
		return nil
	}
	sort.Strings(null)
	return fmt.Errorf("%s: null where a figure belongs", strings.Join(null, ", "))
}

// EngineInfo says which engine measured and how it consumed payloads.
type EngineInfo struct {
	Name string `json:"name"` // raw or valkey-go
	// Discard is how GET payloads left the socket: msg_trunc (dropped in
	// the kernel), read (copied into a reused buffer), tls (decrypted by
	// crypto/tls, then copied into a reused buffer: MSG_TRUNC cannot apply
	// under TLS) or client (valkey-go).
	Discard string `json:"discard,omitempty"` // absent when nothing was measured
	// Send is how SET value bodies went out: copy, splice or zerocopy
	// (lab.Send, as the engine chose it for --send auto: copy to a server
	// on this host, splice elsewhere); absent for
	// valkey-go and when nothing was measured.
	Send string `json:"send,omitempty"`
	// SendCall is the most of a request one send call asks of the
	// socket: "128KiB", "request" where copy writes each request whole
	// (a path that stays on this host), or under TLS "256KiB" of
	// plaintext sealed a call; absent where Send is.
	SendCall string `json:"send_call,omitempty"`
}

// BuildInfo identifies the binary that measured.
type BuildInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	Host      string `json:"hostname,omitempty"`
}

// ServerInfo is what the server said about itself (INFO, CONFIG GET).
type ServerInfo struct {
	Name    string            `json:"name"` // valkey or redis, from INFO server
	Version string            `json:"version"`
	Info    map[string]string `json:"info"`   // selected INFO server/memory fields
	Config  map[string]string `json:"config"` // CONFIG GET values that shape the load
	// DBSizeAfterPrefill is present only when --prefill ran.
	DBSizeAfterPrefill *int64 `json:"dbsize_after_prefill,omitempty"`
}

// Window is the measured window as requested and as it ran.
type Window struct {
	Warmup    Duration `json:"warmup"`
	Requested Duration `json:"requested"`
	Measured  Duration `json:"measured"`
	// Start is when the measured window opened (this host's clock); absent
	// in records written before linerate kept it.
	Start *time.Time `json:"start,omitempty"`
}

// Phase names a part of the run.
type Phase string

const (
	PhasePrefill Phase = "prefill"
	PhaseWarmup  Phase = "warmup"
	PhaseMeasure Phase = "measure"
	PhaseDrain   Phase = "drain" // replies to requests sent in the window, after it closed
)

// PhaseTotals counts completed requests and wire bytes of one phase.
type PhaseTotals struct {
	Ops       map[Op]uint64 `json:"ops"`
	WireSent  uint64        `json:"wire_bytes_sent"`
	WireRecvd uint64        `json:"wire_bytes_received"`
}

// OpResult is one operation's figures over the measured window. Only
// requests completed inside the window count; bytes are counted once, when
// the request they belong to completes.
type OpResult struct {
	Ops          uint64  `json:"ops"`
	OpsPerSec    float64 `json:"ops_per_sec"`
	PayloadBytes uint64  `json:"payload_bytes"` // value bytes delivered (GET) or stored (SET)
	Gbps         float64 `json:"gbps"`          // payload bits per second / 1e9
	WireSent     uint64  `json:"wire_bytes_sent"`
	WireRecvd    uint64  `json:"wire_bytes_received"`
	// Latency is first byte sent to last byte received, in microseconds.
	Latency LatencySummary `json:"latency_us"`
	// TTFB is first byte sent to first reply byte received; GET only.
	TTFB   *LatencySummary      `json:"ttfb_us,omitempty"`
	Misses uint64               `json:"misses"` // nil replies for keys never written
	Verify VerifyCounts         `json:"verify"`
	Series []SecondSample       `json:"series"`
	Errors map[ErrorKind]uint64 `json:"errors,omitempty"`

	// Open loop and mixes. With --rate or --ramp, Latency is
	// from each request's intended send time and Service from its actual
	// send (absent in closed loop, where the two are one). Sizes: per size
	// class of a value-size mix (absent for one size).
	Service *LatencySummary `json:"service_us,omitempty"`
	Sizes   []SizeResult    `json:"sizes,omitempty"`
	// Redirects: a cluster's MOVED and ASK followed (bench --cluster).
	Redirects *Redirects `json:"redirects,omitempty"`
}

// LatencySummary is read from an HDR histogram. Values are microseconds.
type LatencySummary struct {
	Count   int64   `json:"count"`
	P50     float64 `json:"p50"`
	P90     float64 `json:"p90"`
	P95     float64 `json:"p95"` // absent in records written before linerate kept it: At reads the histogram
	P99     float64 `json:"p99"`
	P999    float64 `json:"p99_9"`
	Max     float64 `json:"max"`
	Mean    float64 `json:"mean"`
	SigFigs int     `json:"significant_figures"`
	// Histogram is the HDR V2 compressed encoding (base64), mergeable across
	// runs with Histogram.Merge after decoding.
	Histogram string `json:"histogram"`
	// Percentiles are the percentiles --percentiles asked for that have no
	// field above ("p99.99": µs), read from Histogram; absent when none.
	Percentiles map[string]float64 `json:"percentiles,omitempty"`
}

// VerifyCounts says how many replies were checked and how many failed.
type VerifyCounts struct {
	Mode    Verify `json:"mode"`
	Checked uint64 `json:"checked"`
	Failed  uint64 `json:"failed"`
}

// SecondSample is one second of the measured window.
type SecondSample struct {
	Second       int     `json:"second"`
	Ops          uint64  `json:"ops"`
	PayloadBytes uint64  `json:"payload_bytes"`
	Gbps         float64 `json:"gbps"`
	Errors       uint64  `json:"errors"`
	// P99 is the second's p99 latency in microseconds, within ±5% (a
	// 256-bucket log histogram per second); absent when nothing completed.
	P99 float64 `json:"p99_us,omitempty"`
	// Histogram is the second's latencies as an HDR V2 compressed histogram
	// (base64, microseconds, the window histogram's geometry), rebuilt from
	// the same buckets as P99: values within ±4.4%, counts exact. Absent
	// when nothing completed, and in records written before linerate kept it.
	Histogram string `json:"histogram,omitempty"`
}

// ErrorKind classifies a failed request. Failed requests never count as
// throughput.
type ErrorKind string

const (
	ErrWrongLength ErrorKind = "wrong_length" // bulk length differs from the value size
	ErrBadContent  ErrorKind = "bad_content"  // header, trailer or body did not match
	ErrNilPrefill  ErrorKind = "nil_after_prefill"
	ErrServer      ErrorKind = "server_error" // -ERR and friends
	ErrProtocol    ErrorKind = "protocol"     // a reply that is not RESP we expect
	ErrTimeout     ErrorKind = "timeout"
	ErrConnReset   ErrorKind = "connection" // reset, EOF, refused on reconnect
)

// ClientUsage is the client's own cost: if it ran out of CPU or faulted in
// memory per request, the run measured the client, not the server.
type ClientUsage struct {
	ProcessUserSec   float64       `json:"process_user_sec"`
	ProcessSysSec    float64       `json:"process_sys_sec"`
	MinorFaults      int64         `json:"minor_faults"`
	MinorFaultsPerOp float64       `json:"minor_faults_per_op"`
	CPUSecPerGB      float64       `json:"cpu_sec_per_gb"`
	Workers          []WorkerUsage `json:"workers,omitempty"` // absent for the valkey-go engine
	MaxWorkerBusy    float64       `json:"max_worker_busy"`   // fraction of one CPU, busiest worker
}

// WorkerUsage is one worker thread's CPU over the measured window.
type WorkerUsage struct {
	Worker      int     `json:"worker"`
	CPU         *int    `json:"cpu,omitempty"` // pinned CPU; absent when not pinned
	Connections int     `json:"connections"`
	UserSec     float64 `json:"user_sec"`
	SysSec      float64 `json:"sys_sec"`
	Busy        float64 `json:"busy"` // (user+sys)/window
	MinorFaults int64   `json:"minor_faults"`
}

// Stop says how the run ended.
type Stop struct {
	Reason   StopReason `json:"reason"`
	Error    string     `json:"error,omitempty"`
	ExitCode int        `json:"exit_code"` // the command's (lab/exitcode)
}

// StopReason is why a run ended.
type StopReason string

const (
	StopCompleted   StopReason = "completed"
	StopInterrupted StopReason = "interrupted"  // Ctrl-C or context cancelled
	StopServerLost  StopReason = "server_lost"  // every connection failed and could not reconnect
	StopSetupFailed StopReason = "setup_failed" // connect, auth, prefill
	StopErrors      StopReason = "completed_with_errors"
)

// Thresholds for the notes a record carries about the client itself.
const (
	clientBusyLimit  = 0.90 // a worker this busy may be what limited the run
	faultsPerOpLimit = 1.0  // more than this means the client touched fresh memory per request
)

// Notes flags a run whose figure may be the client's, not the server's.
func (cu ClientUsage) Notes() []string {
	var notes []string
	for _, wu := range cu.Workers {
		if wu.Busy >= clientBusyLimit {
			notes = append(notes, fmt.Sprintf("client-limited: worker %d was busy %.0f%% of the window; the figure may be the client's ceiling, not the server's", wu.Worker, wu.Busy*100))
			break
		}
	}
	if cu.MinorFaultsPerOp > faultsPerOpLimit {
		notes = append(notes, fmt.Sprintf("client page faults: %.1f minor faults per request", cu.MinorFaultsPerOp))
	}
	return notes
}

// ClientLimited reports whether the record says the client may have been
// the bottleneck.
func (r *Result) ClientLimited() bool { return r.Client.MaxWorkerBusy >= clientBusyLimit }

// SinkName is what linerate sink calls itself in INFO server.
const SinkName = "linerate-sink"

// FromSink says whether the record is of a run against linerate sink.
func (r *Result) FromSink() bool { return r.Server != nil && r.Server.Name == SinkName }

// ServerLabel names the server of a record: "valkey 9.1.2", "linerate-sink".
func (r *Result) ServerLabel() string {
	switch {
	case r.Server == nil:
		return "an unknown server"
	case r.FromSink():
		return SinkName
	}
	return r.Server.Name + " " + r.Server.Version
}
