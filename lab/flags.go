package lab

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/linerate/linerate/lab/keys"
)

// BindFlags registers the bench flags on fs, writing into w. The names and
// shorthands match the reference study's client so its command lines run
// unchanged; note that -h is the host, as there, and help is --help.
func BindFlags(fs *pflag.FlagSet, w *Workload) {
	// The flags' defaults are Resolve's, so they are written once; -t is
	// left at zero, for Resolve to fit to the CPUs of the host that runs.
	def := Workload{}.Resolve()
	fs.StringVarP(&w.Host, "host", "h", def.Host, "server address")
	fs.IntVarP(&w.Port, "port", "p", def.Port, "server port")
	fs.StringVarP(&w.Password, "password", "a", "", "AUTH password (with --user: ACL user's password)")
	fs.StringVar(&w.User, "user", "", "ACL user name for AUTH")
	fs.IntVarP(&w.Connections, "connections", "c", def.Connections, fmt.Sprintf("connections in total (1-%d), spread round-robin over the worker threads", MaxConnections))
	fs.IntVarP(&w.Pipeline, "pipeline", "P", def.Pipeline, fmt.Sprintf("requests in flight per connection (1-%d; -c x -P at most %d)", MaxPipeline, MaxInFlight))
	fs.IntVarP(&w.Threads, "threads", "t", 0, fmt.Sprintf("worker OS threads, 1-%d (default: one per CPU in --cpu-list, else one per CPU, at most -c)", MaxThreads))
	fs.VarP(&w.CPUList, "cpu-list", "", "pin worker i to cpu[i mod n]: "+CPUListForms+"; refused if a CPU is not available")
	fs.IntVarP(&w.Keyspace, "keyspace", "n", def.Keyspace, fmt.Sprintf("number of distinct keys (1-%d)", MaxKeyspace))
	fs.IntVar(&w.KeySize, "key-size", def.KeySize, fmt.Sprintf("key length in bytes, at most %d (\"key:\" and a zero-padded number)", MaxKeySize))
	w.ValueSz = def.ValueSz
	fs.VarP(&w.ValueSz, "value-size", "s", "value size, at most "+MaxValueSize.String()+": "+SizeMixForms+"; a key's size is fixed by --seed, so GETs are verified and the prefill writes each key at its size")
	w.Ratio = def.Ratio
	fs.VarP(&w.Ratio, "ratio", "r", "operation mix: "+RatioForms)
	w.KeyDist = def.KeyDist
	fs.Var(&w.KeyDist, "key-dist", "key distribution: "+keys.Forms+"; keys are drawn per connection from --seed")
	// Not a workload field: an acknowledgement the CLI reads back with
	// fs.GetBool (CheckKeyspaceHabit); Args sends it when it is needed.
	fs.Bool("keyspace-large", false, fmt.Sprintf("allow -n above %d with values of %s or more (-n is distinct keys, not a request count)", LargeKeyspace, LargeKeyspaceValue))
	fs.BoolVar(&w.Prefill, "prefill", false, "write every key once before the run and check DBSIZE (GET runs need it for a 100% hit rate)")
	fs.Var(&w.Warmup, "warmup", "load before measuring, not recorded (e.g. 5s; at most "+fmtDur(MaxDuration)+")")
	w.Duration = def.Duration
	fs.VarP(&w.Duration, "duration", "d", fmt.Sprintf("measured window (at most %s, and threads x seconds at most %d: each keeps ~2 KiB of per-second series)", fmtDur(MaxDuration), MaxThreadSeconds))
	w.RequestTimeout = def.RequestTimeout
	fs.Var(&w.RequestTimeout, "request-timeout", "one request's limit from first byte sent to last byte received (pipelined, from when the reply ahead of it ended, if later), at most "+fmtDur(MaxRequestTimeout)+"; the default covers a 64 MiB value on a link shared by 32 connections down to ~300 Mbit/s")
	w.Verify = def.Verify
	fs.Var(&w.Verify, "verify", "GET reply check: none (length only), header (length, value header and trailer of every reply), full (every byte)")
	fs.Uint64Var(&w.Seed, "seed", 1, "seed for key choice and operation mix")
	fs.StringVar(&w.Engine, "engine", def.Engine, "raw (the measuring engine) or valkey-go (a general client, to cross-check the raw engine)")
	fs.Var(&w.Rate, "rate", "open loop: send at this rate whatever the replies do, latency from each request's intended send time; "+RateForms)
	fs.Var(&w.Ramp, "ramp", "open loop in steps, one record with each step's figures and the knee; "+RampForms+"; the steps are the window (no -d)")
	fs.Var(&w.Arrival, "arrival", "how paced requests are spread: "+ArrivalForms+" (default constant)")
	fs.Var(&w.QueueLimit, "queue-limit", fmt.Sprintf("the longest a paced request may wait for its connection past its intended time (%s-%s); one that would wait longer is dropped and the rate called not sustainable", MinQueueLimit, fmtDur(MaxRequestTimeout)))
	// The field stays zero until Resolve fills it in, and only when
	// something is paced (a closed-loop record has no queue limit); the
	// help shows the default a paced run gets.
	fs.Lookup("queue-limit").DefValue = Duration(DefaultQueueLimit).String()
	fs.Var(&w.Send, "send", "how a SET's value body is sent: auto (splice where the kernel has it, copy under --tls), copy (writev), splice (page references through a pipe), zerocopy (MSG_ZEROCOPY; on loopback and veth the kernel still copies)")
	fs.Var(&w.Command, "command", "the command: "+CommandForms+"; mget and mset are closed loop with one value size, raw engine")
	fs.IntVar(&w.KeysPerOp, "keys-per-op", 0, fmt.Sprintf("keys per mget or mset request, distinct, 1-%d (default %d); payload bytes are the sum of the values", MaxKeysPerOp, DefaultKeysPerOp))
	fs.BoolVar(&w.Cluster, "cluster", false, "-h/-p is one node of a cluster: read its slot map (CLUSTER SLOTS), spread connections and keys evenly over the primaries, follow MOVED and ASK (counted in the record)")
	fs.Var(&w.Probe, "probe", "collateral probe: "+ProbeForms+", GETs of keys of their own beside the main load; the record states its p99 under load minus its p99 alone (the warmup's first half)")
	bindTLSFlags(fs, &w.TLS)
}

// PasswordEnv holds the AUTH password when -a is not given: how a
// coordinator hands it to a bench on another host without its command line.
const PasswordEnv = "LINERATE_PASSWORD"

// positiveFlags are the flags whose zero, typed on the command line, is a
// mistake, not "the default".
var positiveFlags = []string{"value-size", "duration", "connections", "pipeline", "threads", "keyspace", "key-size", "request-timeout", "keys-per-op"}

// FinishFlags completes a workload read by BindFlags's flags where one
// flag's default depends on another (a --ramp without -d runs for the
// ramp's length, not for -d's default; --command's ratio is its own; no
// -a takes PasswordEnv), and
// refuses what the flags' own parsers cannot see: a typed zero, a
// keyspace that looks like a request count.
func FinishFlags(fs *pflag.FlagSet, w *Workload) error {
	if !w.Ramp.IsZero() && !fs.Changed("duration") {
		w.Duration = 0
	}
	// --command set without -r is -r 0:100, not -r's default 100:0.
	if w.Command != "" && !fs.Changed("ratio") {
		w.Ratio = Ratio{}
	}
	for _, name := range positiveFlags {
		if f := fs.Lookup(name); fs.Changed(name) && (f.Value.String() == "0" || f.Value.String() == "0s" || f.Value.String() == "0B") {
			return fmt.Errorf("--%s 0: must be positive (see linerate bench --help)", name)
		}
	}
	if w.Password == "" {
		w.Password = os.Getenv(PasswordEnv)
	}
	large, _ := fs.GetBool("keyspace-large")
	return CheckKeyspaceHabit(*w, large)
}

// RedactPassword is a bench command line as a record keeps it: without
// the secret.
func RedactPassword(args []string) []string {
	out := append([]string(nil), args...)
	for i := 0; i < len(out); i++ {
		a := out[i]
		switch {
		case a == "-a" || a == "--password":
			if i+1 < len(out) {
				out[i+1] = "REDACTED"
				i++
			}
		case strings.HasPrefix(a, "--password="):
			out[i] = "--password=REDACTED"
		case strings.HasPrefix(a, "-a") && len(a) > 2:
			out[i] = "-aREDACTED"
		}
	}
	return out
}

// Args renders a resolved workload as bench flags, the inverse of BindFlags.
// The password is left out: callers pass it through the environment.
func (w Workload) Args() []string {
	a := []string{
		"-h", w.Host, "-p", strconv.Itoa(w.Port),
		"-c", strconv.Itoa(w.Connections), "-P", strconv.Itoa(w.Pipeline),
		"-n", strconv.Itoa(w.Keyspace), "--key-size", strconv.Itoa(w.KeySize),
		"-s", valueSizeArg(w.ValueSz), "-r", w.Ratio.String(),
		"--key-dist", w.KeyDist.String(),
		"--warmup", w.Warmup.String(), "-d", w.Duration.String(),
		"--request-timeout", w.RequestTimeout.String(),
		"--verify", string(w.Verify), "--seed", strconv.FormatUint(w.Seed, 10),
		"--engine", w.Engine,
	}
	// No thread count leaves it to the host that runs the load: its default
	// depends on that host's CPUs, not the coordinator's.
	if w.Threads > 0 {
		a = append(a, "-t", strconv.Itoa(w.Threads))
	}
	if w.User != "" {
		a = append(a, "--user", w.User)
	}
	if len(w.CPUList) > 0 {
		a = append(a, "--cpu-list", w.CPUList.String())
	}
	if w.Prefill {
		a = append(a, "--prefill")
	}
	if !w.Rate.IsZero() {
		a = append(a, "--rate", w.Rate.String())
	}
	if !w.Ramp.IsZero() {
		a = append(a, "--ramp", w.Ramp.String())
	}
	if w.Arrival != "" {
		a = append(a, "--arrival", string(w.Arrival))
	}
	if w.QueueLimit != 0 {
		a = append(a, "--queue-limit", w.QueueLimit.String())
	}
	if !w.Probe.IsZero() {
		a = append(a, "--probe", w.Probe.String())
	}
	if w.Command != "" {
		a = append(a, "--command", string(w.Command))
	}
	if w.KeysPerOp != 0 {
		a = append(a, "--keys-per-op", strconv.Itoa(w.KeysPerOp))
	}
	if w.Cluster {
		a = append(a, "--cluster")
	}
	a = append(a, w.TLS.args()...)
	if w.Send != SendAuto {
		a = append(a, "--send", string(w.Send))
	}
	// A campaign's keyspace was asked for by name, not typed as -n out of
	// habit: the bench it starts must not refuse it (CheckKeyspaceHabit).
	if CheckKeyspaceHabit(w, false) != nil {
		a = append(a, "--keyspace-large")
	}
	return a
}

// fmtDur prints whole hours as "24h", not "24h0m0s".
func fmtDur(d time.Duration) string {
	return strings.TrimSuffix(strings.TrimSuffix(d.String(), "0s"), "0m")
}

// valueSizeArg is -s as Args sends it: one size in bytes, as always; a
// mix as ParseSizeMix reads it.
func valueSizeArg(m SizeMix) string {
	if s, ok := m.Single(); ok {
		return strconv.FormatInt(int64(s), 10)
	}
	return m.String()
}
