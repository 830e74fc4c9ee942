package fields

import (
	"fmt"
	"strings"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/cluster"
)

// Bounds on the workload, far above what a 200 Gbps campaign uses (the
// reference study: -c 32 -t 16 -P 1 -n 500 -d 15s) and low enough that a
// typo fails at once instead of eating the client's memory. Each costs
// memory on the client: a worker thread ~1 MiB (buffers and histograms), a
// connection ~14 KiB, a request in flight 48 B, and every thread keeps
// ~2 KiB of per-second latency series per second of -d. -d and --warmup
// are held to lab.MaxDuration, which the schema's own ramp parser meets
// too; soak windows are -d as well.
const (
	MaxConnections = 16384
	MaxPipeline    = 1024
	// MaxInFlight bounds -c x -P: the server holds that many requests.
	MaxInFlight = 65536
	MaxThreads  = 1024
	// MaxKeyspace keeps key numbers in 32 bits, as the engines carry them.
	MaxKeyspace       = 1 << 30
	MaxKeySize        = 512
	MaxRequestTimeout = time.Hour
	// MaxThreadSeconds bounds threads x seconds of -d: 2^19 is 1 GiB of
	// per-second series (e.g. 16 threads for 9 h, 64 for 2 h).
	MaxThreadSeconds = 1 << 19
)

// MaxKeysPerOp bounds --keys-per-op; the raw engine keeps the id of every
// key of the requests in flight (4 bytes each, MaxKeysInFlight in all).
const (
	MaxKeysPerOp    = 1024
	MaxKeysInFlight = 1 << 20
)

// FieldError names the field (as its flag) that is wrong and why.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// Name is the field's long flag name, as campaigns name it: "connections"
// for "-c/--connections".
func (e *FieldError) Name() string {
	if i := strings.LastIndex(e.Field, "--"); i >= 0 {
		return e.Field[i+2:]
	}
	return e.Field
}

// A field's own bounds (one value, read alone) are its Registry entry's
// bound, one function below each; a rule holds a field to bounds that
// read other fields too. Together they are the one place the bounds and
// their messages live: Validate runs every bound and rule on a resolved
// workload (bench flags, a campaign's cells), and CheckField runs a
// field's own bound on one value as a campaign lists it, so a value out
// of bounds reads the same from either.
type rule struct {
	flag string                       // the field as errors name it: "-c/--connections"
	bad  func(w *lab.Workload) string // why w breaks the rule; "" when it does not
}

func msg(format string, a ...any) string { return fmt.Sprintf(format, a...) }

// rules, the bounds between fields, in the order Validate reports them
// (after each field's own, the Registry's bound).
var rules = []rule{
	{"-P/--pipeline", func(w *lab.Workload) string {
		if w.Connections*w.Pipeline > MaxInFlight {
			return msg("%d connections x %d in flight each is more than %d requests in flight; lower -P or -c", w.Connections, w.Pipeline, MaxInFlight)
		}
		return ""
	}},
	{"-t/--threads", func(w *lab.Workload) string {
		if w.Threads > w.Connections {
			return msg("%d threads for %d connections would leave threads idle; use -t <= -c", w.Threads, w.Connections)
		}
		return ""
	}},
	{"-s/--value-size", func(w *lab.Workload) string {
		if w.Verify != lab.VerifyNone && w.ValueSz.Min() < lab.MinVerifiableSize {
			return msg("values under %d bytes cannot carry the verify header; use --verify none", lab.MinVerifiableSize)
		}
		return ""
	}},
	{"-d/--duration", func(w *lab.Workload) string {
		if secs := int((w.Duration.D() + time.Second - 1) / time.Second); w.Threads*secs > MaxThreadSeconds {
			return msg("%s with %d threads keeps %d MiB of per-second latency series; keep threads x seconds at most %d (shorten -d or lower -t)",
				w.Duration, w.Threads, w.Threads*secs/512, MaxThreadSeconds)
		}
		return ""
	}},
	{"--rate", func(w *lab.Workload) string {
		if w.Rate.IsZero() || w.ValueSz.Validate() != nil {
			return ""
		}
		_, err := w.Rate.OpsPerSec(w.MeanValueBytes())
		return errMsg(err)
	}},
	{"--ramp", func(w *lab.Workload) string {
		switch {
		case w.Ramp.IsZero():
			return ""
		case !w.Rate.IsZero():
			return msg("--rate %s and --ramp %s: give one (a ramp's steps are its rates)", w.Rate, w.Ramp)
		case w.ValueSz.Validate() != nil:
			return ""
		}
		_, err := w.Ramp.StepRates(w.MeanValueBytes())
		return errMsg(err)
	}},
	{"-d/--duration", func(w *lab.Workload) string {
		if !w.Ramp.IsZero() && w.Duration.D() != w.Ramp.Length() {
			return msg("%s, but --ramp %s is %s long: a ramp's steps are the measured window; leave -d out", w.Duration, w.Ramp, w.Ramp.Length())
		}
		return ""
	}},
	{"--arrival", func(w *lab.Workload) string {
		if w.Arrival != "" && !w.Paced() {
			return msg("%s paces nothing without --rate, --ramp or --probe", w.Arrival)
		}
		return ""
	}},
	{"--queue-limit", func(w *lab.Workload) string {
		if w.QueueLimit != 0 && !w.Paced() {
			return msg("%s limits the queue of paced requests; give --rate, --ramp or --probe", w.QueueLimit)
		}
		return ""
	}},
	{"--probe", func(w *lab.Workload) string {
		switch {
		case w.Probe.IsZero():
			return ""
		case w.Verify != lab.VerifyNone && w.Probe.Size < lab.MinVerifiableSize:
			return msg("%s: probe values under %d bytes cannot carry the verify header; use --verify none", w.Probe, lab.MinVerifiableSize)
		case w.Warmup.D() < lab.MinProbeWarmup:
			return msg("%s needs --warmup %s or more: its first quarter settles the probe, the next measures it alone (longer when 1,000 GETs need it) and the last half warms the main load", w.Probe, lab.MinProbeWarmup)
		}
		return ""
	}},
	{"--cluster", func(w *lab.Workload) string {
		switch {
		case !w.Cluster:
			return ""
		case w.Engine != lab.EngineRaw:
			return msg("only the raw engine routes by slot; use --engine raw")
		case !w.Probe.IsZero():
			return msg("no --probe against a cluster yet (its keys are not dealt to the nodes)")
		case !w.TLS.IsZero():
			return msg("no --tls against a cluster yet: redirected requests go over plain side connections")
		}
		n := max(w.Keyspace, 1)
		if lo := lab.MinKeySize(n) + ClusterKeyRoom; w.KeySize < lo {
			return msg("--key-size %d leaves no room for the hash tag that places each of %d keys on its node; use %d-%d", w.KeySize, n, lo, MaxKeySize)
		}
		return ""
	}},
	{"--engine", func(w *lab.Workload) string {
		switch {
		case w.Engine != lab.EngineValkeyGo:
			return ""
		case !w.Probe.IsZero():
			return msg("valkey-go has no --probe (it cannot keep the probe's connections apart); use the raw engine")
		case w.OpenLoop() && w.Pipeline > 1:
			return msg("valkey-go paces one request per connection at a time: with -P %d its requests would queue per pipeline slot, not per connection; use the raw engine or -P 1", w.Pipeline)
		}
		return ""
	}},
	// A body sent by reference needs the raw engine's plain socket: under
	// TLS every byte is sealed into a record (a copy), and valkey-go
	// writes through its own buffers.
	{"--send", func(w *lab.Workload) string {
		switch {
		case w.Send == lab.SendAuto || w.Send == lab.SendCopy:
			return ""
		case w.TLS.On:
			return msg("--send %s: under --tls every byte is sealed into a TLS record, a copy; use --send copy or auto", w.Send)
		case w.Engine == lab.EngineValkeyGo:
			return msg("--send %s: the valkey-go engine writes through its own buffers; use the raw engine or --send copy", w.Send)
		}
		return ""
	}},
	{"--command", func(w *lab.Workload) string {
		switch {
		case w.Command.Reads() && w.Ratio.Sets > 0:
			return msg("%s issues no SET, but -r %s asks for SETs; leave -r out", w.Command, w.Ratio)
		case w.Command.Writes() && w.Ratio.Gets > 0:
			return msg("%s issues no GET, but -r %s asks for GETs; leave -r out", w.Command, w.Ratio)
		case !w.Command.Multi():
			return ""
		case w.Engine == lab.EngineValkeyGo:
			return msg("%s: the valkey-go engine sends GET and SET only; use the raw engine", w.Command)
		case w.OpenLoop():
			return msg("%s is closed loop only: --rate and --ramp pace single-key requests", w.Command)
		case !w.Probe.IsZero():
			return msg("%s is refused beside --probe; run the probe with get or set", w.Command)
		case w.Cluster:
			// Its keys would span slots: a cluster answers CROSSSLOT.
			return msg("%s is refused against a --cluster: a request's keys would span slots; use get or set", w.Command)
		}
		if _, one := w.ValueSz.Single(); !one && !w.ValueSz.IsZero() {
			return msg("%s takes one value size, not the mix %s: its per-size figures are per key, its requests carry several", w.Command, w.ValueSz)
		}
		return ""
	}},
	{"--keys-per-op", func(w *lab.Workload) string {
		n := w.KeysPerOp
		switch {
		case n == 0:
			return ""
		case !w.Command.Multi():
			return msg("%d keys per request needs --command mget or mset", n)
		case n > w.Keyspace:
			return msg("the %d keys of one request are distinct, but -n is %d; use -n %d or more", n, w.Keyspace, n)
		case w.Connections*w.Pipeline*n > MaxKeysInFlight:
			return msg("%d connections x %d in flight x %d keys is more than %d keys in flight; lower -c, -P or --keys-per-op", w.Connections, w.Pipeline, n, MaxKeysInFlight)
		case int64(n)*int64(w.ValueSz.Max()) > int64(lab.MaxValueSize):
			return msg("%d values of %s in one request is more than %s", n, w.ValueSz.Max(), lab.MaxValueSize)
		}
		return ""
	}},
}

// ClusterKeyRoom is what a cluster's key names add: a hash tag of at
// most cluster.MaxTagLen characters in braces.
const ClusterKeyRoom = cluster.MaxTagLen + 2

// MinQueueLimit is the shortest --queue-limit: a request counts as late
// only after lab.LateAfter, so a shorter queue would drop requests that
// are not even late.
const MinQueueLimit = lab.LateAfter

func errMsg(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Validate checks a resolved workload (bench flags, a campaign's cells):
// each field's own bound in Registry order, then the rules between
// fields; each error is a *FieldError naming the flag.
func Validate(w lab.Workload) error {
	for _, f := range Registry {
		if f.bound == nil {
			continue
		}
		if m := f.bound(&w); m != "" {
			return &FieldError{Field: f.named(), Msg: m}
		}
	}
	for _, r := range rules {
		if m := r.bad(&w); m != "" {
			return &FieldError{Field: r.flag, Msg: m}
		}
	}
	if flag, m := tlsRule(&w); m != "" {
		return &FieldError{Field: flag, Msg: m}
	}
	return nil
}

// CheckField checks the field of w named by its long flag name (as a
// campaign names it: "connections", "value-size") against the bounds it
// has on its own, as given: zero is not read as "the default". Bounds
// between fields (-t at most -c, -c x -P, --verify against -s) are
// Validate's, on the whole workload. A field without bounds of its own
// passes.
func CheckField(w lab.Workload, name string) error {
	f, ok := Lookup(name)
	if !ok || f.bound == nil {
		return nil
	}
	if m := f.bound(&w); m != "" {
		return &FieldError{Field: f.named(), Msg: m}
	}
	return nil
}

// named is the field as errors name it: "-c/--connections", or
// "--key-size" without a short flag.
func (f Field) named() string {
	if f.Short == "" {
		return "--" + f.Flag
	}
	return "-" + f.Short + "/--" + f.Flag
}

// tlsRule refuses TLS flags that cannot mean anything together; it names
// the flag that is out of place. The files are read by TLSConfig, at
// setup.
func tlsRule(w *lab.Workload) (flag, why string) {
	t := w.TLS
	if !t.On {
		for _, f := range []struct {
			flag string
			set  bool
		}{{"--cacert", t.CACert != ""}, {"--cert", t.Cert != ""}, {"--key", t.Key != ""}, {"--sni", t.SNI != ""}, {"--tls-insecure", t.Insecure}} {
			if f.set {
				return f.flag, "needs --tls"
			}
		}
		return "", ""
	}
	switch {
	case t.Insecure && t.CACert != "":
		return "--tls-insecure", "cannot go with --cacert: either verify against the CA or do not verify"
	case t.Cert != "" && t.Key == "":
		return "--cert", "needs --key (the client certificate's private key)"
	case t.Key != "" && t.Cert == "":
		return "--key", "needs --cert (the client certificate)"
	}
	return "", ""
}

// ShortDuration prints whole hours as "24h", not "24h0m0s": a bound as
// errors and help state it.
func ShortDuration(d time.Duration) string {
	return strings.TrimSuffix(strings.TrimSuffix(d.String(), "0s"), "0m")
}

// Each field's own bounds, named by its Registry entry (bound).

func portBound(w *lab.Workload) string {
	if w.Port <= 0 || w.Port > 65535 {
		return msg("%d is not a TCP port (1-65535)", w.Port)
	}
	return ""
}

func connectionsBound(w *lab.Workload) string {
	if w.Connections < 1 || w.Connections > MaxConnections {
		return msg("%d connections: use 1-%d", w.Connections, MaxConnections)
	}
	return ""
}

func pipelineBound(w *lab.Workload) string {
	if w.Pipeline < 1 || w.Pipeline > MaxPipeline {
		return msg("pipeline depth must be 1-%d, got %d", MaxPipeline, w.Pipeline)
	}
	return ""
}

func threadsBound(w *lab.Workload) string {
	if w.Threads < 1 || w.Threads > MaxThreads {
		return msg("%d worker threads: use 1-%d", w.Threads, MaxThreads)
	}
	return ""
}

func keyspaceBound(w *lab.Workload) string {
	if w.Keyspace < 1 || w.Keyspace > MaxKeyspace {
		return msg("%d keys: use 1-%d", w.Keyspace, MaxKeyspace)
	}
	return ""
}

// keySizeBound: alone (no keyspace yet) a key must still name one key.
// The probe's keys come after the keyspace.
func keySizeBound(w *lab.Workload) string {
	n := max(w.Keyspace, 1)
	if !w.Probe.IsZero() {
		n += lab.ProbeKeys
	}
	switch lo := lab.MinKeySize(n); {
	case w.KeySize > MaxKeySize:
		return msg("%d bytes: keys are at most %d bytes", w.KeySize, MaxKeySize)
	case w.KeySize < lo:
		return msg("%d bytes cannot name %d distinct keys; use %d-%d", w.KeySize, n, lo, MaxKeySize)
	}
	return ""
}

func valueSizeBound(w *lab.Workload) string {
	if w.ValueSz.IsZero() {
		return msg("no value size; use %s", lab.SizeMixForms)
	}
	return errMsg(w.ValueSz.Validate())
}

func durationBound(w *lab.Workload) string {
	if w.Duration <= 0 || w.Duration.D() > lab.MaxDuration {
		return msg("%s: use more than 0s and at most %s", w.Duration, lab.MaxDuration)
	}
	return ""
}

func warmupBound(w *lab.Workload) string {
	if w.Warmup < 0 || w.Warmup.D() > lab.MaxDuration {
		return msg("%s: use 0s to %s", w.Warmup, lab.MaxDuration)
	}
	return ""
}

func requestTimeoutBound(w *lab.Workload) string {
	if w.RequestTimeout <= 0 || w.RequestTimeout.D() > MaxRequestTimeout {
		return msg("%s: use more than 0s and at most %s", w.RequestTimeout, MaxRequestTimeout)
	}
	return ""
}

func engineBound(w *lab.Workload) string {
	if w.Engine != lab.EngineRaw && w.Engine != lab.EngineValkeyGo {
		return msg("%q: use raw or valkey-go", w.Engine)
	}
	return ""
}

func cpuListBound(w *lab.Workload) string { return errMsg(w.CPUList.Validate()) }

func ratioBound(w *lab.Workload) string { return errMsg(w.Ratio.Validate()) }

func verifyBound(w *lab.Workload) string { return errMsg(w.Verify.Validate()) }

func keyDistBound(w *lab.Workload) string { return errMsg(w.KeyDist.Validate()) }

// Open loop: a rate or a ramp alone here; the rules check it against the
// value sizes it paces, and what pacing needs from the other fields.
func rateBound(w *lab.Workload) string {
	if w.Rate.IsZero() {
		return ""
	}
	return errMsg(w.Rate.Validate())
}

func rampBound(w *lab.Workload) string {
	if w.Ramp.IsZero() {
		return ""
	}
	return errMsg(w.Ramp.Validate())
}

func arrivalBound(w *lab.Workload) string {
	if w.Arrival == "" {
		return ""
	}
	return errMsg(w.Arrival.Validate())
}

func queueLimitBound(w *lab.Workload) string {
	if w.QueueLimit < 0 || w.QueueLimit.D() > MaxRequestTimeout || (w.QueueLimit > 0 && w.QueueLimit.D() < MinQueueLimit) {
		return msg("%s: use %s to %s", w.QueueLimit, MinQueueLimit, ShortDuration(MaxRequestTimeout))
	}
	return ""
}

func probeBound(w *lab.Workload) string {
	if w.Probe.IsZero() {
		return ""
	}
	return errMsg(w.Probe.Validate())
}

// Commands: one command, and keys per request (the rules check both
// against the other fields).
func commandBound(w *lab.Workload) string { return errMsg(w.Command.Validate()) }

func keysPerOpBound(w *lab.Workload) string {
	if w.KeysPerOp < 0 || w.KeysPerOp > MaxKeysPerOp {
		return msg("%d keys per request: use 1-%d", w.KeysPerOp, MaxKeysPerOp)
	}
	return ""
}
