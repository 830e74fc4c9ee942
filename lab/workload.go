package lab

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/linerate/linerate/lab/keys"
)

// Workload is everything one bench run's load is. It is the contract between
// the CLI, the sweeps planner (which renders it back to flags with
// fields.Args) and the result record (which stores it whole). The zero
// value of each field means "the default", filled in by Resolve. Each field
// has its entry in lab/fields.Registry: its flag, campaign key and column.
type Workload struct {
	Host     string `json:"host"`
	Port     int    `json:"port"`
	User     string `json:"user,omitempty"`
	Password string `json:"-"` // never stored in a record

	Connections int     `json:"connections"` // total, spread over workers
	Pipeline    int     `json:"pipeline"`    // requests in flight per connection
	Threads     int     `json:"threads"`     // worker OS threads
	CPUList     CPUList `json:"cpu_list,omitempty"`

	Keyspace int       `json:"keyspace"`
	KeySize  int       `json:"key_size"`
	ValueSz  SizeMix   `json:"value_size"` // one size, weighted sizes or a range
	Ratio    Ratio     `json:"ratio"`
	KeyDist  keys.Dist `json:"key_dist"`
	Prefill  bool      `json:"prefill"`
	Warmup   Duration  `json:"warmup"`
	Duration Duration  `json:"duration"`

	RequestTimeout Duration `json:"request_timeout"`
	Verify         Verify   `json:"verify"`
	Seed           uint64   `json:"seed"`
	Engine         string   `json:"engine"`

	// Open loop and the collateral probe. Every zero is closed
	// loop as before, and is left out of the JSON, so records and cell
	// hashes of closed-loop runs read as they always did.
	Rate    Rate    `json:"rate,omitzero"`     // --rate: a constant offered rate
	Ramp    Ramp    `json:"ramp,omitzero"`     // --ramp: steps of rising (or falling) rates
	Arrival Arrival `json:"arrival,omitempty"` // constant or poisson; set when anything is paced
	// QueueLimit is how long past its intended send time a request may
	// wait for its connection; one that would wait longer is dropped and
	// the record says the offered rate was not sustainable.
	QueueLimit Duration `json:"queue_limit,omitempty"`
	Probe      Probe    `json:"probe,omitzero"` // --probe SIZE@RATE

	// Commands: the command issued and, for mget and mset, the
	// keys of each request. Zero is the -r mix of GET and SET, left out
	// of the JSON as the open-loop fields are.
	Command   Command `json:"command,omitempty"`
	KeysPerOp int     `json:"keys_per_op,omitempty"`
	// Cluster: the address is one node of a Valkey/Redis Cluster; the raw
	// engine reads the slot map from it and routes by slot (bench --cluster).
	Cluster bool `json:"cluster,omitempty"`
	// TLS on the data and control connections; zero is plain TCP and
	// is left out of the JSON, so plaintext records read as before.
	TLS TLS `json:"tls,omitzero"`

	// Send: how a SET's value body is sent (--send); zero is auto, left
	// out of the JSON so records of earlier runs read the same.
	Send Send `json:"send,omitempty"`
}

// DefaultQueueLimit is --queue-limit's default: a second of queue is far
// past any latency a paced run is meant to show, and short enough that an
// unsustainable rate is called out within a second of falling behind.
const DefaultQueueLimit = time.Second

// OpenLoop says whether the main load is paced (--rate or --ramp).
func (w Workload) OpenLoop() bool { return !w.Rate.IsZero() || !w.Ramp.IsZero() }

// Paced says whether anything is paced: the main load or the probe.
func (w Workload) Paced() bool { return w.OpenLoop() || !w.Probe.IsZero() }

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
	// MaxDuration bounds -d, --warmup and a ramp's length (lab/fields holds
	// the workload to it; Ramp.Validate too, the ramp parsed on its own).
	MaxDuration = 24 * time.Hour
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
	if r.ValueSz.IsZero() {
		r.ValueSz = OneSize(DefaultValueSize)
	}
	if r.Ratio == (Ratio{}) {
		r.Ratio = Ratio{Gets: 100}
		if r.Command.Writes() {
			r.Ratio = Ratio{Sets: 100}
		}
	}
	if r.Command.Multi() && r.KeysPerOp == 0 {
		r.KeysPerOp = DefaultKeysPerOp
	}
	if r.KeyDist.Kind == "" {
		r.KeyDist.Kind = keys.Uniform
	}
	if r.Duration == 0 && r.Ramp.IsZero() {
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
	if r.Paced() {
		if r.Arrival == "" {
			r.Arrival = ArrivalConstant
		}
		if r.QueueLimit == 0 {
			r.QueueLimit = Duration(DefaultQueueLimit)
		}
	}
	if !r.Ramp.IsZero() && w.Duration == 0 {
		// The ramp is the measured window.
		r.Duration = Duration(r.Ramp.Length())
	}
	return r
}

// Ops lists the operations this mix issues, in record order.
func (w Workload) Ops() []Op {
	switch w.Command {
	case CommandMGet:
		return []Op{OpMGet}
	case CommandMSet:
		return []Op{OpMSet}
	}
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

// Validate says whether the verify mode is one linerate knows, on its own;
// the bounds between fields are lab/fields'.
func (v Verify) Validate() error {
	switch v {
	case VerifyNone, VerifyHeader, VerifyFull:
		return nil
	}
	return fmt.Errorf("%q: use none, header or full", string(v))
}

func (v *Verify) Set(s string) error {
	nv := Verify(s)
	if err := nv.Validate(); err != nil {
		return err
	}
	*v = nv
	return nil
}
func (v Verify) String() string { return string(v) }
func (v *Verify) Type() string  { return "none|header|full" }

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
