package lab

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Workload is everything one bench run's load is. It is the contract between
// the CLI, the sweeps planner (which renders it back to flags with Args) and
// the result record (which stores it whole). The zero value of each field
// means "the default", filled in by Resolve.
type Workload struct {
	Host     string `json:"host"`
	Port     int    `json:"port"`
	User     string `json:"user,omitempty"`
	Password string `json:"-"` // never stored in a record

	Connections int     `json:"connections"` // total, spread over workers
	Pipeline    int     `json:"pipeline"`    // requests in flight per connection
	Threads     int     `json:"threads"`     // worker OS threads
	CPUList     CPUList `json:"cpu_list,omitempty"`

	Keyspace int      `json:"keyspace"`
	KeySize  int      `json:"key_size"`
	ValueSz  Size     `json:"value_size"`
	Ratio    Ratio    `json:"ratio"`
	KeyDist  KeyDist  `json:"key_dist"`
	Prefill  bool     `json:"prefill"`
	Warmup   Duration `json:"warmup"`
	Duration Duration `json:"duration"`

	RequestTimeout Duration `json:"request_timeout"`
	Verify         Verify   `json:"verify"`
	Seed           uint64   `json:"seed"`
	Engine         string   `json:"engine"`
}

// Defaults, chosen for large values. The request timeout must cover a 64 MiB
// value on a slow shared link: 32 connections each moving 64 MiB over a
// 1 Gbit/s link need ~17 s per round, so 60 s leaves room for ~300 Mbit/s.
const (
	DefaultPort           = 6379
	DefaultConnections    = 32
	DefaultPipeline       = 1
	DefaultKeyspace       = 500
	DefaultKeySize        = 16
	DefaultValueSize      = Size(1 << 20)
	DefaultDuration       = 15 * time.Second
	DefaultRequestTimeout = 60 * time.Second
	// MaxValueSize bounds -s: the protocol allows 512 MB bulk strings by
	// default; beyond that the server refuses before we send.
	MaxValueSize = Size(4 << 30)
)

// Bounds on the workload, far above what a 200 Gbps campaign uses (the
// reference study: -c 32 -t 16 -P 1 -n 500 -d 15s) and low enough that a
// typo fails at once instead of eating the client's memory. Each costs
// memory on the client: a worker thread ~1 MiB (buffers and histograms), a
// connection ~14 KiB, a request in flight 48 B, and every thread keeps
// ~2 KiB of per-second latency series per second of -d.
const (
	MaxConnections = 16384
	MaxPipeline    = 1024
	// MaxInFlight bounds -c x -P: the server holds that many requests.
	MaxInFlight = 65536
	MaxThreads  = 1024
	// MaxKeyspace keeps key numbers in 32 bits, as the engines carry them.
	MaxKeyspace = 1 << 30
	MaxKeySize  = 512
	// MaxDuration bounds -d and --warmup; soak windows are -d too.
	MaxDuration       = 24 * time.Hour
	MaxRequestTimeout = time.Hour
	// MaxThreadSeconds bounds threads x seconds of -d: 2^19 is 1 GiB of
	// per-second series (e.g. 16 threads for 9 h, 64 for 2 h).
	MaxThreadSeconds = 1 << 19
)

// EngineRaw is the purpose-built engine; EngineValkeyGo the cross-check.
const (
	EngineRaw      = "raw"
	EngineValkeyGo = "valkey-go"
)

// Resolve fills defaults and returns the workload as it will run.
func (w Workload) Resolve() Workload {
	r := w
	if r.Host == "" {
		r.Host = "127.0.0.1"
	}
	if r.Port == 0 {
		r.Port = DefaultPort
	}
	if r.Connections == 0 {
		r.Connections = DefaultConnections
	}
	if r.Pipeline == 0 {
		r.Pipeline = DefaultPipeline
	}
	if r.Threads == 0 {
		r.Threads = min(r.Connections, runtime.NumCPU())
		if len(r.CPUList) > 0 {
			r.Threads = min(r.Connections, len(r.CPUList))
		}
	}
	if r.Keyspace == 0 {
		r.Keyspace = DefaultKeyspace
	}
	if r.KeySize == 0 {
		r.KeySize = DefaultKeySize
	}
	if r.ValueSz == 0 {
		r.ValueSz = DefaultValueSize
	}
	if r.Ratio == (Ratio{}) {
		r.Ratio = Ratio{Gets: 100}
	}
	if r.KeyDist.Kind == "" {
		r.KeyDist.Kind = KeyUniform
	}
	if r.Duration == 0 {
		r.Duration = Duration(DefaultDuration)
	}
	if r.RequestTimeout == 0 {
		r.RequestTimeout = Duration(DefaultRequestTimeout)
	}
	if r.Verify == "" {
		r.Verify = VerifyHeader
	}
	if r.Engine == "" {
		r.Engine = EngineRaw
	}
	return r
}

// FieldError names the field (as its flag) that is wrong and why.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// Validate checks a resolved workload; each error names the flag.
func (w Workload) Validate() error {
	bad := func(f, format string, a ...any) error { return &FieldError{Field: f, Msg: fmt.Sprintf(format, a...)} }
	switch {
	case w.Port <= 0 || w.Port > 65535:
		return bad("--port", "%d is not a TCP port (1-65535)", w.Port)
	case w.Connections < 1 || w.Connections > MaxConnections:
		return bad("-c/--connections", "%d connections: use 1-%d", w.Connections, MaxConnections)
	case w.Pipeline < 1 || w.Pipeline > MaxPipeline:
		return bad("-P/--pipeline", "pipeline depth must be 1-%d, got %d", MaxPipeline, w.Pipeline)
	case w.Connections*w.Pipeline > MaxInFlight:
		return bad("-P/--pipeline", "%d connections x %d in flight each is more than %d requests in flight; lower -P or -c", w.Connections, w.Pipeline, MaxInFlight)
	case w.Threads < 1 || w.Threads > MaxThreads:
		return bad("-t/--threads", "%d worker threads: use 1-%d", w.Threads, MaxThreads)
	case w.Threads > w.Connections:
		return bad("-t/--threads", "%d threads for %d connections would leave threads idle; use -t <= -c", w.Threads, w.Connections)
	case w.Keyspace < 1 || w.Keyspace > MaxKeyspace:
		return bad("-n/--keyspace", "%d keys: use 1-%d", w.Keyspace, MaxKeyspace)
	case w.KeySize < minKeySize(w.Keyspace) || w.KeySize > MaxKeySize:
		return bad("--key-size", "%d bytes cannot name %d distinct keys; use %d-%d", w.KeySize, w.Keyspace, minKeySize(w.Keyspace), MaxKeySize)
	case w.ValueSz < 1 || w.ValueSz > MaxValueSize:
		return bad("-s/--value-size", "%d bytes is outside 1 B - %s", int64(w.ValueSz), MaxValueSize)
	case w.Verify != VerifyNone && w.ValueSz < MinVerifiableSize:
		return bad("-s/--value-size", "values under %d bytes cannot carry the verify header; use --verify none", MinVerifiableSize)
	case w.Duration <= 0 || w.Duration.D() > MaxDuration:
		return bad("-d/--duration", "%s: use more than 0s and at most %s", w.Duration, MaxDuration)
	case w.Warmup < 0 || w.Warmup.D() > MaxDuration:
		return bad("--warmup", "%s: use 0s to %s", w.Warmup, MaxDuration)
	case w.RequestTimeout <= 0 || w.RequestTimeout.D() > MaxRequestTimeout:
		return bad("--request-timeout", "%s: use more than 0s and at most %s", w.RequestTimeout, MaxRequestTimeout)
	case w.Engine != EngineRaw && w.Engine != EngineValkeyGo:
		return bad("--engine", "%q: use raw or valkey-go", w.Engine)
	}
	if secs := int((w.Duration.D() + time.Second - 1) / time.Second); w.Threads*secs > MaxThreadSeconds {
		return bad("-d/--duration", "%s with %d threads keeps %d MiB of per-second latency series; keep threads x seconds at most %d (shorten -d or lower -t)",
			w.Duration, w.Threads, w.Threads*secs/512, MaxThreadSeconds)
	}
	if err := w.CPUList.Validate(); err != nil {
		return bad("--cpu-list", "%v", err)
	}
	if err := w.Ratio.validate(); err != nil {
		return bad("-r/--ratio", "%v", err)
	}
	if err := w.Verify.validate(); err != nil {
		return bad("--verify", "%v", err)
	}
	if err := w.KeyDist.validate(); err != nil {
		return bad("--key-dist", "%v", err)
	}
	return nil
}

// minKeySize is the shortest key that still names n distinct keys with the
// "key:" prefix used by every engine.
func minKeySize(n int) int { return len(keyPrefix) + len(strconv.Itoa(max(n-1, 0))) }

// Ops lists the operations this mix issues, in record order.
func (w Workload) Ops() []Op {
	var ops []Op
	if w.Ratio.Gets > 0 {
		ops = append(ops, OpGet)
	}
	if w.Ratio.Sets > 0 {
		ops = append(ops, OpSet)
	}
	return ops
}

// Addr is host:port.
func (w Workload) Addr() string {
	if strings.Contains(w.Host, ":") && !strings.HasPrefix(w.Host, "[") {
		return "[" + w.Host + "]:" + strconv.Itoa(w.Port)
	}
	return w.Host + ":" + strconv.Itoa(w.Port)
}

// Op is one operation kind.
type Op string

const (
	OpGet Op = "GET"
	OpSet Op = "SET"
)

// Verify is how much of each GET reply is checked.
type Verify string

const (
	VerifyNone   Verify = "none"   // length only (the RESP header), still an error on mismatch
	VerifyHeader Verify = "header" // length, value header and trailer: every reply, cheaply
	VerifyFull   Verify = "full"   // every byte, which reads the payload into user space
)

func (v Verify) validate() error {
	switch v {
	case VerifyNone, VerifyHeader, VerifyFull:
		return nil
	}
	return fmt.Errorf("%q: use none, header or full", string(v))
}

func (v *Verify) Set(s string) error {
	nv := Verify(s)
	if err := nv.validate(); err != nil {
		return err
	}
	*v = nv
	return nil
}
func (v Verify) String() string { return string(v) }
func (v *Verify) Type() string  { return "none|header|full" }

// KeyDist is how keys are drawn: uniform, sequential, or zipf with exponent.
type KeyDist struct {
	Kind  string  `json:"kind"`
	Alpha float64 `json:"alpha,omitempty"`
}

const (
	KeyUniform    = "uniform"
	KeySequential = "sequential"
	KeyZipf       = "zipf"
)

// Zipf exponents outside [MinZipfAlpha, MaxZipfAlpha] are refused: closer
// to 1 Go's sampler draws keys outside the keyspace, above 10 every draw is
// key 0 or 1 already, and NaN or Inf would make it spin.
const (
	MinZipfAlpha = 1.001
	MaxZipfAlpha = 10
)

// KeyDistForms is the help text for KeyDist.
const KeyDistForms = "uniform, sequential, or zipf:ALPHA with ALPHA from 1.001 to 10 (e.g. zipf:1.1)"

func ParseKeyDist(s string) (KeyDist, error) {
	kind, a, hasA := strings.Cut(strings.TrimSpace(s), ":")
	d := KeyDist{Kind: kind}
	if hasA {
		f, err := strconv.ParseFloat(a, 64)
		if err != nil {
			return KeyDist{}, fmt.Errorf("%q: use %s", s, KeyDistForms)
		}
		d.Alpha = f
	}
	if err := d.validate(); err != nil {
		return KeyDist{}, err
	}
	return d, nil
}

func (d KeyDist) validate() error {
	switch d.Kind {
	case KeyUniform, KeySequential:
		if d.Alpha != 0 {
			return fmt.Errorf("%s takes no parameter; use %s", d.Kind, KeyDistForms)
		}
		return nil
	case KeyZipf:
		// Written so that NaN fails too.
		if !(d.Alpha >= MinZipfAlpha && d.Alpha <= MaxZipfAlpha) {
			return fmt.Errorf("zipf:%g: use %s", d.Alpha, KeyDistForms)
		}
		return nil
	}
	return fmt.Errorf("%q: use %s", d.Kind, KeyDistForms)
}

func (d KeyDist) String() string {
	if d.Kind == KeyZipf {
		return fmt.Sprintf("zipf:%g", d.Alpha)
	}
	return d.Kind
}

func (d *KeyDist) Set(s string) error {
	p, err := ParseKeyDist(s)
	if err != nil {
		return err
	}
	*d = p
	return nil
}
func (d *KeyDist) Type() string { return "dist" }

// Duration is a time.Duration that reads and writes as "15s" in JSON and YAML.
type Duration time.Duration

func (d Duration) D() time.Duration { return time.Duration(d) }
func (d Duration) String() string   { return time.Duration(d).String() }
func (d *Duration) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: use Go durations such as 500ms, 15s, 2m", s)
	}
	*d = Duration(v)
	return nil
}
func (d *Duration) Type() string { return "duration" }
func (d Duration) MarshalText() ([]byte, error) {
	return []byte(time.Duration(d).String()), nil
}
func (d *Duration) UnmarshalText(b []byte) error { return d.Set(string(b)) }
