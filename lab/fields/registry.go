// Package fields is the one table of the bench's workload fields. Each
// entry says, once, what a lab.Workload field is called on the command
// line, in a campaign and in the flat export, its default, its help and
// how other tools name it; the flag binding (BindFlags), the argv of a
// remote bench (Args), the typed-zero check (FinishFlags), the docs'
// flag table (Markdown) and the tests that hold the campaign axes and the
// export columns to the table are all read from it.
//
// The bounds a workload is held to live here too, beside the table: one
// rule per flag in bounds.go (Validate runs them all, CheckField one
// field's own, FieldError names the flag), the habit and prefill checks
// in habits.go, and the reading of the TLS files the flags name
// (TLSConfig).
//
// Package lab is the record's schema and knows no flag package: the flags
// and the bounds live here, one package above it.
package fields

import (
	"fmt"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/keys"
)

// Field is one workload field. Help follows pflag's convention: a word in
// backquotes is the placeholder the help prints after the flag.
type Field struct {
	Go    string // its path in lab.Workload ("Connections", "TLS.On"); "" for a flag that is no field
	Flag  string // long flag name, also how errors and campaigns name it
	Short string // one-letter flag, "" for none

	// Key is the campaign's workload key; NoKey says why a field has none.
	Key, NoKey string
	// Column is the flat export's column (or columns, comma-separated);
	// NoColumn says why a field is not exported.
	Column, NoColumn string

	Help string
	// Preset: BindFlags starts the field at Resolve's default, so --help
	// shows it. Default is a value to start at instead; Shown is what the
	// help and the docs say when the field starts at zero and Resolve
	// fills it in later.
	Preset         bool
	Default, Shown string
	// Always: Args sends the field even when zero; otherwise a zero field
	// is left out, for the bench to fill in.
	Always bool
	// Positive: zero typed on the command line is a mistake, not "the
	// default".
	Positive bool
	// Example is a value other than the default, as --FLAG=EXAMPLE takes
	// it: the registry's test sends every field through the flags and Args
	// with it.
	Example string
	// Meaning is the docs table's short description; Others, what
	// valkey-benchmark (vb) and memtier_benchmark (mt) call it.
	Meaning, Others string
	// arg renders the field for Args when its flag value's String is not
	// what the bench should be sent; "" leaves it out.
	arg func(w lab.Workload) string
	// bound says why one value of the field, read alone, is out of its
	// bounds; "" when within, nil when it has none (bounds.go holds each,
	// and the rules between fields).
	bound func(w *lab.Workload) string
}

// Registry is every workload flag of linerate bench, in --help order.
var Registry = []Field{
	{Go: "Host", Flag: "host", Example: "198.18.0.1", Short: "h", NoKey: "the session places the server", NoColumn: "the session's choice, not the workload's", Preset: true, Always: true,
		Help:    "server address",
		Meaning: "server address (help is `--help`)", Others: "vb `-h` the same; mt `-s, --server` (mt's `-h` is help)"},
	{Go: "Port", Flag: "port", Example: "6380", Short: "p", NoKey: "the session places the server", NoColumn: "the session's choice, not the workload's", Preset: true, Always: true,
		Help:    "server `port`",
		Meaning: "server port", Others: "vb `-p`, mt `-p`: the same",
		bound: portBound},
	{Go: "Password", Flag: "password", Example: "secret", Short: "a", NoKey: "a secret: from $" + PasswordEnv, NoColumn: "a secret, never stored",
		Help:    "AUTH `password` (with --user: ACL user's password)",
		Meaning: "AUTH password (or `$" + PasswordEnv + "`)", Others: "vb `-a`, `--user`; mt `-a USER:PASSWORD` in one argument",
		arg: func(lab.Workload) string { return "" }},
	{Go: "Connections", Flag: "connections", Example: "7", Short: "c", Key: "connections", Column: "connections", Preset: true, Always: true, Positive: true,
		Help:    fmt.Sprintf("`N` connections in total (1-%d), spread round-robin over the worker threads", MaxConnections),
		Meaning: "connections in total, round-robin over the workers", Others: "vb `-c` total too (default 50); mt `-c` is clients **per thread**, total = `-c` × `-t`",
		bound: connectionsBound},
	{Go: "Pipeline", Flag: "pipeline", Example: "3", Short: "P", Key: "pipeline", Column: "pipeline", Preset: true, Always: true, Positive: true,
		Help:    fmt.Sprintf("`N` requests in flight per connection (1-%d; -c x -P at most %d)", MaxPipeline, MaxInFlight),
		Meaning: "requests in flight per connection", Others: "vb `-P` the same; mt `--pipeline` (mt's `-P` is the protocol)",
		bound: pipelineBound},
	{Go: "Threads", Flag: "threads", Example: "5", Short: "t", Key: "threads", Column: "threads", Positive: true,
		Help:    fmt.Sprintf("`N` worker OS threads, 1-%d (default: one per CPU in --cpu-list, else one per CPU, at most -c)", MaxThreads),
		Meaning: "worker OS threads", Shown: "one per `--cpu-list` CPU, else per CPU, at most `-c`",
		Others: "vb `--threads` (vb's `-t` picks tests); mt `-t` (default 4)",
		bound:  threadsBound},
	{Go: "User", Flag: "user", Example: "bench", NoKey: "the server block's ACL", Column: "user",
		Help:    "ACL user `name` for AUTH",
		Meaning: "ACL user", Others: "vb `-a`, `--user`; mt `-a USER:PASSWORD` in one argument"},
	{Go: "CPUList", Flag: "cpu-list", Example: "0-3", Key: "cpu-list", Column: "cpu_list",
		Help:    "pin worker i to cpu[i mod n]: " + lab.CPUListForms + "; refused if a CPU is not available",
		Meaning: "pin worker i to cpu[i mod n] (`4-19`, `0,2,4-7`); refused if a CPU is missing", Shown: "unpinned",
		Others: "none in either (use `taskset`)",
		bound:  cpuListBound},
	{Go: "Keyspace", Flag: "keyspace", Example: "200000", Short: "n", Key: "keyspace", Column: "keyspace", Preset: true, Always: true, Positive: true,
		Help:    fmt.Sprintf("`N`, the number of distinct keys (1-%d)", MaxKeyspace),
		Meaning: fmt.Sprintf("**distinct keys**; above %d with values of %s or more it asks for `--keyspace-large`", LargeKeyspace, LargeKeyspaceValue),
		Others:  "vb `-r` (vb's `-n` is the total request count); mt `--key-maximum` − `--key-minimum` (mt's `-n` is requests per client)",
		bound:   keyspaceBound},
	{Go: "KeySize", Flag: "key-size", Example: "20", Key: "key-size", Column: "key_size", Preset: true, Always: true, Positive: true,
		Help:    fmt.Sprintf("key length in `bytes`, at most %d (\"key:\" and a zero-padded number)", MaxKeySize),
		Meaning: "key length (`key:` + zero-padded number)", Others: "vb: fixed `key:` + 12 digits; mt: `--key-prefix` + the number",
		bound: keySizeBound},
	{Go: "ValueSz", Flag: "value-size", Example: "1MiB:60,16MiB:40", Short: "s", Key: "value-size", Column: "value_size,value_size_text", Preset: true, Always: true, Positive: true,
		Help:    "value size, at most " + lab.MaxValueSize.String() + ": " + lab.SizeMixForms + "; a key's size is fixed by --seed, so GETs are verified and the prefill writes each key at its size",
		Meaning: "bytes, `8MiB` (= 8388608) or `8MB` (= 8000000), or a mix: weighted sizes `1MiB:60,16MiB:30` or a log-uniform range `1MiB-64MiB`, each key's size fixed by `--seed`",
		Others:  "vb `-d`, mt `-d, --data-size`: bytes only (vb's `-s` is a Unix socket, mt's `-s` the server); mixes: vb none; mt `--data-size-list SIZE:WEIGHT,...` and `--data-size-range MIN-MAX` (uniform, per request, not per key, so a GET cannot know its length)",
		arg:     valueSizeArg,
		bound:   valueSizeBound},
	{Go: "Ratio", Flag: "ratio", Example: "90:10", Short: "r", Key: "ratio", Column: "ratio_get,ratio_set", Preset: true, Always: true,
		Help:    "operation mix: " + lab.RatioForms,
		Meaning: "GET:SET, e.g. `100:0`, `0:100`, `90:10`", Others: "vb: none, one command per test (`-t get,set`; vb's `-r` is the keyspace); mt `--ratio` is **SET:GET**, the other way round (default 1:10)",
		bound: ratioBound},
	{Go: "KeyDist", Flag: "key-dist", Example: "zipf:0.9", Key: "key-dist", Column: "key_dist", Preset: true, Always: true,
		Help:    "key distribution: " + keys.Forms + "; keys are drawn per connection from --seed",
		Meaning: "`uniform`, `sequential`, `zipf:0.9`, `gaussian:0.5,0.1`", Others: "vb: uniform over `-r`, newer valkey-benchmark `--sequential`; mt `--key-pattern` `R`, `S`, `G` (Gaussian), `P`; no Zipf",
		bound: keyDistBound},
	{Go: "Prefill", Flag: "prefill", Example: "true", Key: "prefill", Column: "prefill",
		Help:    "write every key once before the run and check DBSIZE (GET runs need it for a 100% hit rate)",
		Meaning: "write every key once first, check DBSIZE; refused when keys × value size exceed the server's `maxmemory` or, on loopback, this host's free memory", Shown: "off",
		Others: "vb: a separate `-t set` run; mt: a separate `--ratio 1:0 --key-pattern P:P -n allkeys` run; neither checks the memory"},
	{Go: "Warmup", Flag: "warmup", Example: "2s", Key: "warmup", Column: "warmup_s", Always: true,
		Help:    "load before measuring, not recorded (e.g. 5s; at most " + ShortDuration(lab.MaxDuration) + ")",
		Meaning: "unrecorded load before the measured window", Shown: "0s", Others: "vb: `-n` requests (newer valkey-benchmark: `--warmup`, `--duration` in seconds; vb's `-d` is the value size); mt `--test-time` in seconds, no warmup (mt's `-d` is the value size)",
		bound: warmupBound},
	{Go: "Duration", Flag: "duration", Example: "9s", Short: "d", Key: "duration", Column: "duration_s", Preset: true, Always: true, Positive: true,
		Help:    fmt.Sprintf("measured window (at most %s, and threads x seconds at most %d: each keeps ~2 KiB of per-second series)", ShortDuration(lab.MaxDuration), MaxThreadSeconds),
		Meaning: "the measured window", Others: "vb: `-n` requests (newer valkey-benchmark: `--warmup`, `--duration` in seconds; vb's `-d` is the value size); mt `--test-time` in seconds, no warmup (mt's `-d` is the value size)",
		bound: durationBound},
	{Go: "RequestTimeout", Flag: "request-timeout", Example: "7s", Key: "request-timeout", Column: "request_timeout_s", Preset: true, Always: true, Positive: true,
		Help:    "one request's limit from first byte sent to last byte received (pipelined, from when the reply ahead of it ended, if later), at most " + ShortDuration(MaxRequestTimeout) + "; the default covers a 64 MiB value on a link shared by 32 connections down to ~300 Mbit/s",
		Meaning: "one request's limit, also with `-P` (a pipelined request's clock starts when the reply ahead of it on its connection ended, if later; raw engine); covers a 64 MiB value on a link shared by 32 connections down to ~300 Mbit/s", Others: "none in either",
		bound: requestTimeoutBound},
	{Go: "Verify", Flag: "verify", Example: "full", Key: "verify", Column: "verify", Preset: true, Always: true,
		Help:    "GET reply check: none (length only), header (length, value header and trailer of every reply), full (every byte)",
		Meaning: "`none` (length only), `header` (length, key, both ends of the value), `full` (every byte)", Others: "vb: none (replies are not checked); mt `--data-verify`: a separate pass after the test",
		bound: verifyBound},
	{Go: "Seed", Flag: "seed", Example: "42", NoKey: "the campaign's top-level seed", Column: "seed", Default: "1", Always: true,
		Help:    "`seed` for key choice and operation mix",
		Meaning: "key choice, op mix and value pattern", Others: "vb: seeded from the clock (newer valkey-benchmark `--seed`); mt: a constant seed unless `--randomize`, one per client with `--distinct-client-seed`"},
	{Go: "Engine", Flag: "engine", Example: "valkey-go", Key: "engine", Column: "engine", Preset: true, Always: true,
		Help:    "`engine`: raw (the measuring engine) or valkey-go (a general client, to cross-check the raw engine)",
		Meaning: "`raw` (the instrument) or `valkey-go` (a general client, to cross-check)", Others: "none",
		bound: engineBound},
	{Go: "Rate", Flag: "rate", Example: "300", Key: "rate", Column: "rate,rate_ops_per_sec",
		Help:    "open loop: send at this rate whatever the replies do, latency from each request's intended send time; " + lab.RateForms,
		Meaning: "open loop: `R` requests/s in total (`300`, `1.5k`) or a payload bit rate (`20Gbps`, over the mean value size), each request sent at its scheduled time whatever the replies do; latency from that time (queueing included), service time from the real send beside it, every request due counted once (completed, failed, dropped or still owed), offered vs achieved, and a verdict: sustained only at ≥ 95 % achieved, a queue that did not grow and nothing dropped", Shown: "closed loop",
		Others: "vb `--rps`, mt `--rate-limiting` (per connection): both hold a closed loop back and time each request from its real send, so a queue never shows in their latency",
		bound:  rateBound},
	{Go: "Ramp", Flag: "ramp", Example: "50:800:8:10s", Key: "ramp", Column: "ramp,ramp_steps",
		Help:    "open loop in steps, one record with each step's figures and the knee; " + lab.RampForms + "; the steps are the window (no -d)",
		Meaning: "open loop in steps (`50:800:8:10s`, `2Gbps:32Gbps:6:2s`): one record with each step's offered and achieved rate, p50/p95/p99, late, dropped, and the knee (first step with p99 over 2× the first's, or achieved over 5 % short); the steps are the window, no `-d`", Shown: "none", Others: "none in either",
		bound: rampBound},
	{Go: "Arrival", Flag: "arrival", Example: "poisson", Key: "arrival", Column: "arrival",
		Help:    "how paced requests are spread: " + lab.ArrivalForms + " (default constant)",
		Meaning: "`constant` (evenly spaced) or `poisson` (exponential gaps from `--seed`)", Shown: "constant", Others: "none in either",
		bound: arrivalBound},
	{Go: "QueueLimit", Flag: "queue-limit", Example: "2s", Key: "queue-limit", Column: "queue_limit_s", Shown: lab.Duration(lab.DefaultQueueLimit).String(),
		Help:    fmt.Sprintf("the longest a paced request may wait for its connection past its intended time (%s-%s); one that would wait longer is dropped and the rate called not sustainable", MinQueueLimit, ShortDuration(MaxRequestTimeout)),
		Meaning: "the longest a paced request waits for its connection past its scheduled time; longer, it is dropped and the run called not sustainable, rather than becoming closed loop", Others: "none in either",
		bound: queueLimitBound},
	{Go: "Probe", Flag: "probe", Example: "100B@200", Key: "probe", Column: "probe",
		Help:    "collateral probe: " + lab.ProbeForms + ", GETs of keys of their own beside the main load; the record states its p99 under load minus its p99 alone (the warmup's first half)",
		Meaning: "the collateral probe (`100B@200`): GETs of small keys of their own at `RATE` on 4 connections of their own, alone in the warmup until 1,000 of its GETs are in (at most 30 s; the warmup runs longer when that needs it), then beside the main load; the record states its p99 under load minus alone with a noise band, or \"no measurable effect\" when the band holds zero (needs `--warmup` 2s or more)", Shown: "none",
		Others: "none in either",
		bound:  probeBound},
	{Go: "Command", Flag: "command", Example: "mget", Key: "command", Column: "op",
		Help:    "the command: " + lab.CommandForms + "; mget and mset are closed loop with one value size, raw engine",
		Meaning: "`get`, `set` (the same as `-r 100:0`, `-r 0:100`), `mget` or `mset`: every request one MGET / MSET of `--keys-per-op` distinct keys, each value verified as a GET's, payload the sum of the values; one wrong value is one error of the request; recorded as `ops.MGET` / `ops.MSET`. mget/mset: closed loop, one value size, raw engine, no `-r` mix, no `--probe`", Shown: "the `-r` mix",
		Others: "vb `-t get,set,mset` (MSET of 10 keys, no MGET); mt `--multi-key-get`, or any `--command \"mget __key__ __key__\"` (replies not checked)",
		bound:  commandBound},
	{Go: "KeysPerOp", Flag: "keys-per-op", Example: "4", Key: "keys-per-op", Column: "keys_per_op", Positive: true, Shown: fmt.Sprint(lab.DefaultKeysPerOp),
		Help:    fmt.Sprintf("`N` keys per mget or mset request, distinct, 1-%d (default %d); payload bytes are the sum of the values", MaxKeysPerOp, lab.DefaultKeysPerOp),
		Meaning: "keys per mget/mset request, 1–1024, at most `-n`", Others: "vb: 10, fixed; mt `--multi-key-get N` (MGETs of **up to** N keys on the GET side of `--ratio`), or as many `__key__` as a `--command` writes",
		bound: keysPerOpBound},
	{Go: "Cluster", Flag: "cluster", Example: "true", NoKey: "the server block's cluster: N", NoColumn: "the version's server block says it (cell IDs name the cluster)",
		Help:    "-h/-p is one node of a cluster: read its slot map (CLUSTER SLOTS), spread connections and keys evenly over the primaries, follow MOVED and ASK (counted in the record)",
		Meaning: "`-h`/`-p` is one node of a cluster: read its slot map (`CLUSTER SLOTS`), spread connections and keys evenly over the primaries, follow `MOVED` and `ASK` (counted per op in the record's `redirects` and `cluster` section); raw engine, no `--tls` or mget/mset yet", Shown: "off",
		Others: "vb `--cluster`; mt `--cluster-mode`"},
	{Go: "TLS.On", Flag: "tls", Example: "true", NoKey: "the server block's tls: true", NoColumn: "the version's server block says it",
		Help:    "speak TLS on every connection (data and control); GET payloads are then read through a reused buffer, never dropped with MSG_TRUNC",
		Meaning: "TLS on every connection (data and control): Go's crypto/tls runs the handshake, then a TLS 1.3 AES-GCM session's records are opened and sealed in place by the raw engine's epoll workers (no allocation per request; TLS 1.2 and ChaCha20 stay on crypto/tls); GET payloads are decrypted into a reused buffer (no MSG_TRUNC: `engine.discard` is `tls`); wire bytes are plaintext, payload plus protocol", Shown: "off", Others: "vb `--tls`; mt `--tls`"},
	{Go: "TLS.CACert", Flag: "cacert", Example: "/ca.pem", NoKey: "made per start by the session", NoColumn: "a path on the client host",
		Help:    "with --tls: PEM `file` of the CA that signed the server's certificate (default: the system's roots)",
		Meaning: "PEM CA that signed the server's certificate; a server another CA signed is a setup error (exit 3) naming the certificate problem", Shown: "the system's roots", Others: "vb `--cacert`; mt `--cacert`"},
	{Go: "TLS.Cert", Flag: "cert", Example: "/c.pem", NoKey: "made per start by the session", NoColumn: "a path on the client host",
		Help:    "with --tls: client certificate PEM `file`, for servers with tls-auth-clients (needs --key)",
		Meaning: "client certificate, for `tls-auth-clients yes` (needs `--key`)", Shown: "none", Others: "vb `--cert`, `--key`; mt `--cert`, `--key`"},
	{Go: "TLS.Key", Flag: "key", Example: "/k.pem", NoKey: "made per start by the session", NoColumn: "a path on the client host",
		Help:    "with --tls: the client certificate's private key PEM `file` (needs --cert)",
		Meaning: "the client certificate's key (needs `--cert`)", Shown: "none", Others: "vb `--cert`, `--key`; mt `--cert`, `--key`"},
	{Go: "TLS.SNI", Flag: "sni", Example: "srv", NoKey: "the session names the server", NoColumn: "the server's name, not the workload's",
		Help:    "with --tls: server `name` to send and to check the certificate against (default: -h)",
		Meaning: "server name sent and checked against the certificate", Shown: "`-h`", Others: "vb `--sni`; mt `--sni`"},
	{Go: "TLS.Insecure", Flag: "tls-insecure", Example: "true", NoKey: "never in a campaign: the session trusts its own CA", NoColumn: "never in a campaign",
		Help:    "with --tls: do not verify the server's certificate (never the default; not with --cacert)",
		Meaning: "do not verify the server's certificate: only when named, never with `--cacert`", Shown: "off", Others: "vb `--insecure`; mt `--tls-skip-verify`"},
	{Go: "Send", Flag: "send", Example: "splice", Key: "send", Column: "send",
		Help:    "how a SET's value body is sent: auto (copy when the server is on this host, splice elsewhere where the kernel has it, copy under --tls), copy (writev; a whole request a call when the server is on this host), splice (page references through a pipe), zerocopy (MSG_ZEROCOPY; on loopback and veth the kernel still copies)",
		Meaning: "how a SET's value body of 32 KiB or more is sent: `copy` (writev, 128 KiB a call; a whole request a call when the server is on this host, where the send delivers inside the call and chunks gain nothing), `splice` (page references through a pipe, no copy on the client), `zerocopy` (MSG_ZEROCOPY; loopback and veth still copy), `auto` (copy when the server is on this host, splice elsewhere where a pipe opens, copy under `--tls`); what ran is recorded as `engine.send` and `engine.send_call`", Shown: "auto",
		Others: "none in either (both copy)"},
	KeyspaceLarge,
}

// KeyspaceLarge is no workload field: an acknowledgement FinishFlags reads
// back, which Args sends when the keyspace needs it (a campaign's keyspace
// was asked for by name, not typed as -n out of habit).
var KeyspaceLarge = Field{Flag: "keyspace-large", Example: "true", NoKey: "a campaign's keyspace is asked for by name", NoColumn: "not a field: an acknowledgement",
	Help:    fmt.Sprintf("allow -n above %d with values of %s or more (-n is distinct keys, not a request count)", LargeKeyspace, LargeKeyspaceValue),
	Meaning: fmt.Sprintf("allow `-n` above %d with values of %s or more", LargeKeyspace, LargeKeyspaceValue), Shown: "off",
	Others: "none: it guards the `-n` habit",
	arg: func(w lab.Workload) string {
		if CheckKeyspaceHabit(w, false) != nil {
			return "true"
		}
		return ""
	}}

// Lookup is the field with the long flag name, as campaigns and errors
// name it.
func Lookup(flag string) (Field, bool) {
	for _, f := range Registry {
		if f.Flag == flag {
			return f, true
		}
	}
	return Field{}, false
}
