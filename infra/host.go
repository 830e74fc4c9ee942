package infra

// This file is the host contract: a Host is one machine (or network
// namespace) of a pair, and a Provider brings a pair up and always takes it
// down. Implementations: infra/netns (local and netns), infra/sshhost (hosts
// the user already has) and infra/aws (an EC2 instance pair).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Command is one command run on a host.
type Command struct {
	Argv []string
	// Env is added to the command's environment (KEY=VALUE).
	Env []string
	// Dir is the working directory; "" is the host's default (the login
	// directory over SSH, the caller's directory locally).
	Dir   string
	Stdin io.Reader
	// Stdout and Stderr receive output as it arrives; nil discards it.
	Stdout, Stderr io.Writer
	// Timeout ends the command (and fails it) after this long; 0 leaves
	// only the context.
	Timeout time.Duration
	// Once: when the connection drops while the command runs, fail instead
	// of running it again. For long sessions whose rerun would start over
	// with their state lost (the agent); short commands leave it false.
	Once bool
}

// Validate names the bad field.
func (c Command) Validate() error {
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return errors.New("command argv: empty")
	}
	if c.Timeout < 0 {
		return fmt.Errorf("command timeout: %v is negative", c.Timeout)
	}
	for _, e := range c.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || !envName.MatchString(k) {
			return fmt.Errorf("command env: %q is not KEY=VALUE", e)
		}
	}
	return nil
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ExitError is a command that ran and exited non-zero (or was killed).
type ExitError struct {
	Host string
	Argv []string
	Code int    // -1 when killed by a signal or the exit status was lost
	Tail string // the end of standard error, when it was captured
}

func (e *ExitError) Error() string {
	s := fmt.Sprintf("%s: %s: exit code %d", e.Host, strings.Join(e.Argv, " "), e.Code)
	if e.Tail != "" {
		s += ": " + e.Tail
	}
	return s
}

// ErrTimeout is wrapped by a command's error when its Timeout ran out.
var ErrTimeout = errors.New("command timed out")

// NIC is one network interface of a host.
type NIC struct {
	Name  string       `json:"name"`
	MTU   int          `json:"mtu,omitempty"`
	Addrs []netip.Addr `json:"addrs,omitempty"`
}

// HostFacts are what a host says about itself.
type HostFacts struct {
	Arch   string `json:"arch"`   // Go's name: amd64, arm64
	CPUs   int    `json:"cpus"`   // online CPUs
	Kernel string `json:"kernel"` // uname -r
	NICs   []NIC  `json:"nics"`
}

// NICWithAddr is the interface carrying addr, or "" when none does.
func (f HostFacts) NICWithAddr(addr netip.Addr) string {
	for _, n := range f.NICs {
		for _, a := range n.Addrs {
			if a == addr {
				return n.Name
			}
		}
	}
	return ""
}

// Host is one machine of a pair, or a network namespace standing in for one.
// A Host is a Runner, so launchers run through it.
type Host interface {
	Runner
	// Name labels the host in messages and records ("server", "client", or
	// an address).
	Name() string
	// Exec runs a command, streaming its output to the Command's writers.
	// A non-zero exit is an *ExitError; a timeout wraps ErrTimeout.
	Exec(ctx context.Context, c Command) error
	// Put copies a local file to path on the host (written under a temporary
	// name, then renamed) with the given mode.
	Put(ctx context.Context, local, remote string, mode fs.FileMode) error
	// Get copies a file from the host to a local path.
	Get(ctx context.Context, remote, local string) error
	// Facts reports the host's architecture, CPUs, kernel and NICs.
	Facts(ctx context.Context) (HostFacts, error)
	// DataAddr is the host's address on the data plane: servers listen on
	// it and clients connect to it.
	DataAddr() netip.Addr
	// Linerate is the path, on the host, of a linerate binary for its
	// architecture, uploaded on first use where the host is remote.
	Linerate(ctx context.Context) (string, error)
	// Close releases connections; it does not tear the host down.
	Close() error
}

// What some hosts can do beyond Host, asked for by type assertion on these
// interfaces (never on a provider's own type): the provider's package is
// then the only place that knows which hosts can.

// Entered is a host this process can act inside: a network namespace of
// this machine (infra/netns), or the machine itself.
type Entered interface {
	Host
	// Do runs fn on a thread inside the host's network namespace, for
	// work done in this process (ethtool ioctls, opening sockets).
	Do(fn func() error) error
	// DialContext dials from inside the host's namespace.
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
	// Listen listens inside the host's namespace.
	Listen(network, addr string) (net.Listener, error)
	// Enter is the argv prefix that runs a command inside the host's
	// namespace (ip netns exec NAME); nil: this process's own namespace.
	Enter() []string
}

// SharedFiles is a host that shares this machine's file system: a path
// here names the same file there, so nothing need be copied.
type SharedFiles interface {
	Host
	SharesFiles() bool
}

// FilesHere says whether h shares this machine's file system.
func FilesHere(h Host) bool {
	s, ok := h.(SharedFiles)
	return ok && s.SharesFiles()
}

// Pair is what a provider brings up: the host that runs the servers and the
// host that runs the load.
type Pair struct {
	Server Host
	Client Host
	// Clients are every client host, Client first, when the spec asked
	// for several (Spec.Clients); nil is Client alone.
	Clients []Host
}

// ClientHosts is every client host of the pair, Client first.
func (p Pair) ClientHosts() []Host {
	if len(p.Clients) > 0 {
		return p.Clients
	}
	return []Host{p.Client}
}

// MaxClients bounds Spec.Clients: client hosts that run one cell's load
// together.
const MaxClients = 16

// Spec is what every provider is told about the campaign it serves. Each
// provider's own settings are in its constructor's configuration.
type Spec struct {
	// Campaign is the campaign ID: it names and tags what is created, so
	// leftovers of a crashed run can be found.
	Campaign string `json:"campaign"`
	// Dir is the campaign's directory: pinned host keys (known_hosts) and
	// the provider's state file are kept there.
	Dir string `json:"dir,omitempty"`
	// Queues is the NIC queue count for providers that create the NICs
	// (netns: veth rx and tx queues at creation, from the tuning profile);
	// 0 means 1.
	Queues int `json:"queues,omitempty"`
	// Clients is how many client hosts to bring up (1-MaxClients); 0
	// means 1.
	Clients int `json:"clients,omitempty"`
}

// ClientCount is Clients, 0 read as 1.
func (s Spec) ClientCount() int { return max(s.Clients, 1) }

// Validate names the bad field.
func (s Spec) Validate() error {
	if s.Campaign == "" {
		return errors.New("spec campaign: empty; give the campaign ID")
	}
	if !campaignID.MatchString(s.Campaign) {
		return fmt.Errorf("spec campaign: %q: use letters, digits, '.', '_' and '-' (at most 64)", s.Campaign)
	}
	if s.Queues < 0 || s.Queues > 256 {
		return fmt.Errorf("spec queues: %d out of range 0-256", s.Queues)
	}
	if s.Clients < 0 || s.Clients > MaxClients {
		return fmt.Errorf("spec clients: %d out of range 1-%d", s.Clients, MaxClients)
	}
	return nil
}

var campaignID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Provider brings a pair of hosts up and takes it down.
//
// Down must be called after Up, whether Up succeeded or not, and also when
// the caller was interrupted: give it a fresh context (the caller's is
// likely cancelled). It removes everything the provider created for the
// spec, found by name or tag rather than only by what Up remembered, so a
// second Down, or a Down in a new process after a crash, also cleans up.
// Down of nothing is nil.
type Provider interface {
	Kind() string
	Up(ctx context.Context, s Spec) (Pair, error)
	Down(ctx context.Context) error
}

// TeardownTimeout bounds a Down started because of an error or an
// interrupt.
const TeardownTimeout = 10 * time.Minute

// TeardownContext is a context for Down that survives the cancellation of
// parent (Ctrl-C) but still ends after TeardownTimeout.
func TeardownContext(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(parent), TeardownTimeout)
}

// RunCommand is Runner.Run in terms of Exec: standard output is returned,
// the tail of standard error goes into the *ExitError.
func RunCommand(ctx context.Context, h Host, argv ...string) ([]byte, error) {
	var out bytes.Buffer
	errTail := &TailBuffer{Max: 4096}
	err := h.Exec(ctx, Command{Argv: argv, Stdout: &out, Stderr: errTail})
	var ee *ExitError
	if errors.As(err, &ee) && ee.Tail == "" {
		ee.Tail = strings.TrimSpace(errTail.String())
	}
	return out.Bytes(), err
}

// TailBuffer keeps the last Max bytes written to it.
type TailBuffer struct {
	Max int
	b   []byte
}

func (t *TailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if over := len(t.b) - t.Max; t.Max > 0 && over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *TailBuffer) String() string { return string(t.b) }

// LastLine is the last non-empty line of s (a command's stderr, a log
// tail): what one line of an error message can carry.
func LastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// factsScript prints what ProbeFacts parses; it needs only a POSIX shell,
// uname, nproc and iproute2, which every lab host has.
const factsScript = `uname -m; uname -r; nproc; ip -j addr show`

// ProbeFacts asks a host about itself with a small shell command.
func ProbeFacts(ctx context.Context, h Host) (HostFacts, error) {
	out, err := h.Run(ctx, "sh", "-c", factsScript)
	if err != nil {
		return HostFacts{}, fmt.Errorf("probe facts of %s: %w", h.Name(), err)
	}
	f, err := ParseFacts(out)
	if err != nil {
		return HostFacts{}, fmt.Errorf("probe facts of %s: %w", h.Name(), err)
	}
	return f, nil
}

// ParseFacts reads the output of the facts probe: machine, kernel, CPU
// count, then `ip -j addr show`.
func ParseFacts(out []byte) (HostFacts, error) {
	lines := strings.SplitN(string(out), "\n", 4)
	if len(lines) < 4 {
		return HostFacts{}, fmt.Errorf("facts: want 4 parts (uname -m, uname -r, nproc, ip -j addr), got %d", len(lines))
	}
	var f HostFacts
	var err error
	if f.Arch, err = GoArch(strings.TrimSpace(lines[0])); err != nil {
		return HostFacts{}, err
	}
	f.Kernel = strings.TrimSpace(lines[1])
	if f.CPUs, err = strconv.Atoi(strings.TrimSpace(lines[2])); err != nil || f.CPUs < 1 {
		return HostFacts{}, fmt.Errorf("facts: nproc said %q", strings.TrimSpace(lines[2]))
	}
	var links []struct {
		Name  string `json:"ifname"`
		MTU   int    `json:"mtu"`
		Addrs []struct {
			Local string `json:"local"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal([]byte(lines[3]), &links); err != nil {
		return HostFacts{}, fmt.Errorf("facts: ip -j addr show: %w", err)
	}
	for _, l := range links {
		n := NIC{Name: l.Name, MTU: l.MTU}
		for _, a := range l.Addrs {
			if ip, err := netip.ParseAddr(a.Local); err == nil {
				n.Addrs = append(n.Addrs, ip)
			}
		}
		f.NICs = append(f.NICs, n)
	}
	return f, nil
}

// GoArch maps `uname -m` to Go's architecture name, the suffix of the
// binaries `make dist` builds.
func GoArch(machine string) (string, error) {
	switch machine {
	case "x86_64", "amd64":
		return "amd64", nil
	case "aarch64", "arm64":
		return "arm64", nil
	}
	return "", fmt.Errorf("architecture %q: linerate is built for x86_64 and aarch64 only", machine)
}
