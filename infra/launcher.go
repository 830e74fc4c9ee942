// Package infra holds the contracts between linerate's coordinator and the
// hosts it runs servers on. This file is the server-launcher contract:
// settings a campaign names, the Launcher that starts a server version with
// them, and the Server it gets back. Implementations live in infra/launch;
// the local store of server versions in infra/servers.
package infra

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/linerate/linerate/lab/cpus"
	"github.com/linerate/linerate/lab/tlsgen"
)

// Kind is a server family. Valkey and Redis share their flags; KeyDB and
// Garnet get a mapping.
type Kind string

// Server kinds linerate can start.
const (
	Valkey Kind = "valkey"
	Redis  Kind = "redis"
	KeyDB  Kind = "keydb"
	Garnet Kind = "garnet"
)

// Kinds lists every kind, for error messages.
var Kinds = []Kind{Valkey, Redis, KeyDB, Garnet}

// ErrUnsupportedSetting is returned when a setting does not exist in the
// server kind or version asked for; it is refused rather than passed
// through to a server that would reject it or crash.
var ErrUnsupportedSetting = errors.New("setting not supported by this server")

// Persistence is what a server keeps on disk while it serves: nothing
// (the study's setting), RDB snapshots, or an append-only file synced
// every second or on every write. The zero value is none.
type Persistence string

// Persistence settings.
const (
	PersistNone        Persistence = "none"
	PersistRDB         Persistence = "rdb"
	PersistAOFEverySec Persistence = "aof-everysec"
	PersistAOFAlways   Persistence = "aof-always"
)

// Persistences lists every setting, for messages.
var Persistences = []Persistence{PersistNone, PersistRDB, PersistAOFEverySec, PersistAOFAlways}

// PersistencesForms is the accepted values, for messages.
const PersistencesForms = "none, rdb, aof-everysec or aof-always"

// ParsePersistence reads a persistence setting; "" is none.
func ParsePersistence(s string) (Persistence, error) {
	if s == "" {
		return PersistNone, nil
	}
	for _, p := range Persistences {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("%q: use %s", s, PersistencesForms)
}

// RDBSchedule is the snapshot schedule rdb runs with: Redis 7's default,
// written out, so every version and kind snapshots alike whatever its own
// default is (older ones save after 15 minutes instead of an hour).
const RDBSchedule = "3600 1 300 100 60 10000"

// PersistenceArgs are the flags that set persistence: a campaign's raw
// args naming one of them would fight the setting.
var PersistenceArgs = []string{"--save", "--appendonly", "--appendfsync"}

// ACLUser is a user created at start with every permission.
type ACLUser struct {
	Name     string `json:"name"`
	Password string `json:"-"`
}

// ServerSettings are what a campaign names about the server of a cell.
// The zero value of each field means the stated default.
type ServerSettings struct {
	Kind    Kind   `json:"kind"`    // default valkey
	Version string `json:"version"` // upstream version, e.g. 9.1.2; launchers fill it from the binary's identity
	Port    int    `json:"port"`    // 0: the local launcher picks a free port; containers use the server default 6379
	Bind    string `json:"bind"`    // "": 127.0.0.1 (containers: their host address); never every address by default
	// IOThreads is io-threads (Valkey/Redis >= 6) or server-threads (KeyDB);
	// 0 leaves the server default.
	IOThreads int `json:"io_threads,omitempty"`
	// IOThreadsDoReads sets io-threads-do-reads; nil leaves it unset. Valkey 8
	// made reads always threaded and Redis 8 reworked I/O threads, so it is
	// refused there.
	IOThreadsDoReads *bool       `json:"io_threads_do_reads,omitempty"`
	MaxMemory        string      `json:"maxmemory,omitempty"`   // e.g. 60gb; "" leaves the default
	Persistence      Persistence `json:"persistence,omitempty"` // "" or none: --save '' --appendonly no, as the study ran
	ProtectedMode    bool        `json:"protected_mode"`        // false: --protected-mode no, as the study ran
	RequirePass      string      `json:"-"`
	User             *ACLUser    `json:"user,omitempty"`
	// CPUs is the CPU list the server is pinned to ("8-23", "0,2-3"); ""
	// leaves it unpinned.
	CPUs  string   `json:"cpus,omitempty"`
	Extra []string `json:"extra,omitempty"` // passed last, verbatim
	// Env is added to the server's environment (KEY=VALUE), e.g.
	// MALLOC_CONF=oversize_threshold:0; it is part of the version's identity.
	Env []string `json:"env,omitempty"`
	// TLS serves TLS only: the plain port is closed (--port 0) and Port
	// is the TLS port. The launcher makes a throwaway CA and server
	// certificate for the start (lab/tlsgen) unless TLSFiles names some.
	TLS          bool          `json:"tls,omitempty"`
	TLSFiles     *tlsgen.Files `json:"-"`
	StartTimeout time.Duration `json:"-"` // default 15s
	StopTimeout  time.Duration `json:"-"` // per escalation step; default 5s
	LogDir       string        `json:"-"` // where server.log is kept; default a new temp dir
}

// Validate names the first bad field.
func (s ServerSettings) Validate() error {
	if s.Kind != "" && !validKind(s.Kind) {
		return fmt.Errorf("server settings kind: unknown %q (accepted: valkey, redis, keydb, garnet)", s.Kind)
	}
	if s.Port < 0 || s.Port > 65535 {
		return fmt.Errorf("server settings port: %d out of range 0-65535", s.Port)
	}
	if s.IOThreads < 0 || s.IOThreads > 128 {
		return fmt.Errorf("server settings io_threads: %d out of range 0-128", s.IOThreads)
	}
	if _, err := s.PinCPUs(); err != nil {
		return fmt.Errorf("server settings cpus: %w", err)
	}
	for _, e := range s.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return fmt.Errorf("server settings env: %q is not KEY=VALUE", e)
		}
	}
	if s.User != nil && (s.User.Name == "" || s.User.Password == "") {
		return errors.New("server settings user: name and password are both required")
	}
	if s.Version != "" && !validVersion(s.Version) {
		return fmt.Errorf("server settings version: %q is not a dotted version like 9.1.2", s.Version)
	}
	if _, err := ParsePersistence(string(s.Persistence)); err != nil {
		return fmt.Errorf("server settings persistence: %w", err)
	}
	return nil
}

// PinCPUs is the CPU list the server is pinned to; nil when CPUs is unset.
// A list that names no CPU is refused: it would pin to nothing.
func (s ServerSettings) PinCPUs() (cpus.List, error) {
	if s.CPUs == "" {
		return nil, nil
	}
	l, err := cpus.Parse(s.CPUs)
	if err == nil && len(l) == 0 {
		err = fmt.Errorf("cpu list %q: empty", s.CPUs)
	}
	return l, err
}

func validKind(k Kind) bool {
	for _, x := range Kinds {
		if x == k {
			return true
		}
	}
	return false
}

func validVersion(v string) bool {
	for _, p := range strings.Split(v, ".") {
		if _, err := strconv.Atoi(p); err != nil {
			return false
		}
	}
	return true
}

// KindOrDefault is Kind, or Valkey when unset.
func (s ServerSettings) KindOrDefault() Kind {
	if s.Kind == "" {
		return Valkey
	}
	return s.Kind
}

// atLeast reports whether version is unknown or >= min (both dotted).
func atLeast(version string, min ...int) bool {
	if version == "" {
		return true
	}
	parts := strings.Split(version, ".")
	for i, m := range min {
		n := 0
		if i < len(parts) {
			n, _ = strconv.Atoi(parts[i])
		}
		if n != m {
			return n > m
		}
	}
	return true
}

func refuse(s ServerSettings, setting, why string) error {
	v := s.Version
	if v == "" {
		v = "(any version)"
	}
	return fmt.Errorf("%w: %s on %s %s: %s", ErrUnsupportedSetting, setting, s.KindOrDefault(), v, why)
}

// Args returns the server's command-line arguments for these settings (what
// follows the binary or image name). For Valkey and Redis with the study's
// settings and Port 0 it is exactly the study's
// --save ” --appendonly no --io-threads 16 --protected-mode no --maxmemory 60gb.
// A setting the kind or version lacks is an ErrUnsupportedSetting.
func (s ServerSettings) Args() ([]string, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if s.KindOrDefault() == Garnet {
		return s.garnetArgs()
	}
	k := s.KindOrDefault()
	var a []string
	switch p, _ := ParsePersistence(string(s.Persistence)); p { // Validate read it
	case PersistNone:
		a = append(a, "--save", "", "--appendonly", "no")
	case PersistRDB:
		a = append(a, "--save", RDBSchedule, "--appendonly", "no")
	case PersistAOFEverySec:
		a = append(a, "--save", "", "--appendonly", "yes", "--appendfsync", "everysec")
	case PersistAOFAlways:
		a = append(a, "--save", "", "--appendonly", "yes", "--appendfsync", "always")
	}
	if s.IOThreads > 0 {
		switch {
		case k == KeyDB:
			a = append(a, "--server-threads", strconv.Itoa(s.IOThreads))
		case k == Redis && !atLeast(s.Version, 6):
			return nil, refuse(s, "io-threads", "I/O threads arrived in Redis 6.0")
		default:
			a = append(a, "--io-threads", strconv.Itoa(s.IOThreads))
		}
	}
	if s.ProtectedMode {
		a = append(a, "--protected-mode", "yes")
	} else {
		a = append(a, "--protected-mode", "no")
	}
	if s.MaxMemory != "" {
		a = append(a, "--maxmemory", s.MaxMemory)
	}
	switch {
	case s.TLS && k == Redis && !atLeast(s.Version, 6):
		return nil, refuse(s, "tls", "TLS arrived in Redis 6.0")
	case s.TLS && s.Port == 0:
		return nil, refuse(s, "tls", "the TLS port must be chosen (the plain port is closed)")
	case s.TLS && s.TLSFiles == nil:
		return nil, errors.New("server settings tls: no certificate files (the launcher makes them)")
	case s.TLS:
		a = append(a, s.TLSFiles.ServerArgs(s.Port, false)...)
	case s.Port != 0:
		a = append(a, "--port", strconv.Itoa(s.Port))
	}
	if s.Bind != "" {
		a = append(a, "--bind", s.Bind)
	}
	if s.IOThreadsDoReads != nil {
		switch {
		case k == KeyDB:
			return nil, refuse(s, "io-threads-do-reads", "KeyDB's server-threads do all I/O")
		case k == Valkey && atLeast(s.Version, 8) && s.Version != "":
			return nil, refuse(s, "io-threads-do-reads", "Valkey 8 always threads reads; the setting has no effect")
		case k == Redis && atLeast(s.Version, 8) && s.Version != "":
			return nil, refuse(s, "io-threads-do-reads", "Redis 8 reworked I/O threads; the setting has no effect")
		case k == Redis && !atLeast(s.Version, 6):
			return nil, refuse(s, "io-threads-do-reads", "I/O threads arrived in Redis 6.0")
		}
		a = append(a, "--io-threads-do-reads", yesNo(*s.IOThreadsDoReads))
	}
	if s.RequirePass != "" {
		a = append(a, "--requirepass", s.RequirePass)
	}
	if s.User != nil {
		if k == Redis && !atLeast(s.Version, 6) {
			return nil, refuse(s, "user", "ACL users arrived in Redis 6.0")
		}
		a = append(a, "--user", s.User.Name, "on", ">"+s.User.Password, "~*", "&*", "+@all")
	}
	return append(a, s.Extra...), nil
}

// garnetArgs maps the settings onto Garnet's own options. Garnet keeps
// nothing on disk unless asked, so persistence off needs no flag; its
// checkpoints and AOF commit frequencies are not mapped onto rdb and the
// aof settings (give its own flags as extra arguments).
func (s ServerSettings) garnetArgs() ([]string, error) {
	var a []string
	if p := s.Persistence; p != "" && p != PersistNone {
		return nil, refuse(s, "persistence "+string(p), "Garnet's checkpoints and AOF commit frequency are not mapped; give its own flags (--aof, --aof-commit-freq) as extra arguments")
	}
	if s.IOThreads > 0 {
		return nil, refuse(s, "io-threads", "Garnet has no io-threads; size its thread pool with extra flags (--minthreads, --maxthreads)")
	}
	if s.TLS {
		return nil, refuse(s, "tls", "Garnet takes its certificate as a PFX file (--cert-file-name); not mapped")
	}
	if s.IOThreadsDoReads != nil {
		return nil, refuse(s, "io-threads-do-reads", "Garnet has no such setting")
	}
	if s.ProtectedMode {
		return nil, refuse(s, "protected-mode", "Garnet has no protected mode; bind to a private address instead")
	}
	if s.User != nil {
		return nil, refuse(s, "user", "Garnet takes ACL users from an ACL file (--acl-file), not from the command line")
	}
	if s.MaxMemory != "" {
		a = append(a, "--memory", s.MaxMemory)
	}
	if s.Port != 0 {
		a = append(a, "--port", strconv.Itoa(s.Port))
	}
	if s.Bind != "" {
		a = append(a, "--bind", s.Bind)
	}
	if s.RequirePass != "" {
		a = append(a, "--auth", "Password", "--password", s.RequirePass)
	}
	return append(a, s.Extra...), nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// ServerIdentity is what a record says about which server ran: every field
// that can change its speed. Env is part of it: the same binary with
// MALLOC_CONF set is a different server for the lab.
type ServerIdentity struct {
	Kind      Kind              `json:"kind"`
	Version   string            `json:"version"`             // upstream, as INFO reports it
	Build     string            `json:"build,omitempty"`     // Debian version, image tag, or binary path
	Source    string            `json:"source"`              // "debian:<suite>", "image", "path"
	Runtime   string            `json:"runtime,omitempty"`   // suite of the library closure
	Libraries map[string]string `json:"libraries,omitempty"` // e.g. libc6, libjemalloc2 versions
	Env       []string          `json:"env,omitempty"`       // environment set for the server
	BinarySHA string            `json:"binary_sha256,omitempty"`
}

// String is a one-line label: "valkey 9.1.2 (debian:sid 9.1.2-1, runtime sid, MALLOC_CONF=…)".
func (id ServerIdentity) String() string {
	var extra []string
	if id.Source != "" {
		extra = append(extra, strings.TrimSpace(id.Source+" "+id.Build))
	}
	if id.Runtime != "" {
		extra = append(extra, "runtime "+id.Runtime)
	}
	extra = append(extra, id.Env...)
	s := string(id.Kind) + " " + id.Version
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	return s
}

// ThreadCPUs is one thread of a running server and the CPUs it may run on.
type ThreadCPUs struct {
	TID  int    `json:"tid"`
	Name string `json:"name"`
	CPUs string `json:"cpus"`
}

// ServerFacts is captured once the server answers: what it says about
// itself and how it was started.
type ServerFacts struct {
	Identity   ServerIdentity    `json:"identity"`
	Argv       []string          `json:"argv"`
	PID        int               `json:"pid,omitempty"`
	Addr       string            `json:"addr"`
	InfoServer map[string]string `json:"info_server"`
	InfoMemory map[string]string `json:"info_memory"`
	Config     map[string]string `json:"config"` // effective CONFIG GET values
	Threads    []ThreadCPUs      `json:"threads,omitempty"`
	StartedAt  time.Time         `json:"started_at"`
	ReadyAfter time.Duration     `json:"ready_after_ns"`
	// TLS is how to reach a TLS-only server; nil for plain TCP.
	TLS *ServerTLS `json:"tls,omitempty"`
}

// ServerTLS is what a client needs to trust a TLS-only server: the CA
// that signed its certificate and the name to check it against.
type ServerTLS struct {
	CAFile     string `json:"ca_file"`     // on the host that started it
	CA         []byte `json:"-"`           // the CA certificate, PEM
	ServerName string `json:"server_name"` // what the certificate names: the bind address
}

// ClientConfig trusts the server's CA only (not the system's roots) and
// checks its certificate names ServerName.
func (t *ServerTLS) ClientConfig() (*tls.Config, error) {
	return (&tlsgen.Bundle{CACert: t.CA}).ClientConfig(t.ServerName)
}

// ConfigKeys are read back with CONFIG GET after start, so a record holds
// what the server really runs with, not only what was asked.
var ConfigKeys = []string{"port", "bind", "io-threads", "io-threads-do-reads", "server-threads", "maxmemory",
	"maxmemory-policy", "save", "appendonly", "appendfsync", "protected-mode", "tls-port"}

// Exit is how a server ended.
type Exit struct {
	Expected bool   `json:"expected"` // ended by Stop
	Code     int    `json:"code"`     // exit code, -1 when killed by a signal
	Signal   string `json:"signal,omitempty"`
	LogTail  string `json:"log_tail,omitempty"`
	Err      error  `json:"-"`
}

func (e Exit) String() string {
	if e.Signal != "" {
		return "killed by " + e.Signal
	}
	return "exited with code " + strconv.Itoa(e.Code)
}

// Server is one started server.
type Server interface {
	// Addr is host:port to connect to.
	Addr() string
	// Facts are what was captured at start.
	Facts() ServerFacts
	// Exited yields one Exit when the server ends without Stop (crash,
	// SIGKILL, OOM) and is closed after any end, expected or not.
	Exited() <-chan Exit
	// Stop ends the server: SHUTDOWN NOSAVE, then SIGTERM, then SIGKILL,
	// each after StopTimeout. Stopping a server that already ended returns
	// nil. The log is kept.
	Stop(ctx context.Context) error
	// LogPath is the server's log file on the host running the launcher
	// (copied there for containers).
	LogPath() string
}

// Launcher starts a server version on a host with the given settings and
// returns when it answers PING and its facts are captured. A server that
// exits during start gives an error with its log tail.
type Launcher interface {
	Start(ctx context.Context, s ServerSettings) (Server, error)
}

// Runner runs a command on a host and returns its standard output; the
// container launcher drives docker through it. A non-zero exit is an error
// that includes standard error.
type Runner interface {
	Run(ctx context.Context, argv ...string) ([]byte, error)
}
