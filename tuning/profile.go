package tuning

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/linerate/linerate/lab/cpus"

	"go.yaml.in/yaml/v3"
)

// Profile is how a lab host should be tuned for a run. Every field may be
// left out; Resolve derives what is missing from the host's topology (see
// docs/tuning.md for the rules). The zero Profile means "the NIC carrying
// the default route is not known": NIC or NICAddress must be set.
type Profile struct {
	// NIC is the interface name (ens50). NICAddress instead names it by an
	// address it carries (the data-plane address). Exactly one is set.
	NIC        string `json:"nic,omitempty" yaml:"nic,omitempty"`
	NICAddress string `json:"nic_address,omitempty" yaml:"nic_address,omitempty"`

	// Irqbalance is "stopped" (default: it would move pinned IRQs back),
	// "running", or "leave" (not touched, not checked).
	Irqbalance string `json:"irqbalance,omitempty" yaml:"irqbalance,omitempty"`
	// IrqbalanceBannedCPUs, with irqbalance running, are CPUs it may not
	// put interrupts on. Default: the server's and the client's CPUs.
	IrqbalanceBannedCPUs string `json:"irqbalance_banned_cpus,omitempty" yaml:"irqbalance_banned_cpus,omitempty"`

	// Queues is the NIC's queue count: combined, or rx and tx for drivers
	// without combined queues. Default: one queue per IRQ CPU.
	Queues Queues `json:"queues,omitzero" yaml:"queues,omitempty"`

	// IRQCPUs take the NIC's queue interrupts (list format, "0-3").
	// Default: N whole cores on the NIC's NUMA node, first thread of each,
	// N = the queue count if given, else one per 16 cores (at least 1).
	IRQCPUs string `json:"irq_cpus,omitempty" yaml:"irq_cpus,omitempty"`
	// IRQSpread is "round-robin" (default: queue i's IRQs go to the i-th
	// IRQ CPU, wrapping) or "shared" (every IRQ may run on any IRQ CPU).
	IRQSpread string `json:"irq_spread,omitempty" yaml:"irq_spread,omitempty"`

	// ServerCPUs and ClientCPUs are where the server and the load generator
	// run. Default: the whole cores left on the NIC's NUMA node, first half
	// to the server, second half to the client.
	ServerCPUs string `json:"server_cpus,omitempty" yaml:"server_cpus,omitempty"`
	ClientCPUs string `json:"client_cpus,omitempty" yaml:"client_cpus,omitempty"`

	// AllowOverlap lists pairs of sets that may share CPUs: "irq+server",
	// "irq+client", "server+client" (server and client on different hosts,
	// as in the reference study). Without it the sets are disjoint, and IRQ
	// CPUs never share an SMT core with the server.
	AllowOverlap []string `json:"allow_overlap,omitempty" yaml:"allow_overlap,omitempty"`

	// Sysctls are set by dotted name (net.core.rmem_max: "268435456").
	Sysctls map[string]string `json:"sysctls,omitempty" yaml:"sysctls,omitempty"`
}

// Queues is a queue count. Zero fields are "not set".
type Queues struct {
	Combined int `json:"combined,omitempty" yaml:"combined,omitempty"`
	RX       int `json:"rx,omitempty" yaml:"rx,omitempty"`
	TX       int `json:"tx,omitempty" yaml:"tx,omitempty"`
}

// Irqbalance states.
const (
	IrqbalanceStopped = "stopped"
	IrqbalanceRunning = "running"
	IrqbalanceLeave   = "leave"
)

// IRQ spreads.
const (
	SpreadRoundRobin = "round-robin"
	SpreadShared     = "shared"
)

// Overlap pairs.
const (
	OverlapIRQServer    = "irq+server"
	OverlapIRQClient    = "irq+client"
	OverlapServerClient = "server+client"
)

// FieldError names the profile field that is wrong.
type FieldError struct {
	Field string // YAML/JSON name, e.g. "server_cpus" or "queues.combined"
	Msg   string
	Line  int // line in the profile file, when known
}

func (e *FieldError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s: %s", e.Line, e.Field, e.Msg)
	}
	return e.Field + ": " + e.Msg
}

func fieldErr(field, format string, a ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, a...)}
}

// Validate checks what can be checked without the host: forms, ranges and
// overlaps between sets the profile states. Resolve checks the rest against
// the host (CPUs beyond it, SMT siblings, a server left without CPUs).
func (p Profile) Validate() error {
	if p.NIC == "" && p.NICAddress == "" {
		return fieldErr("nic", "missing: set nic (an interface name such as ens50) or nic_address (an address the NIC carries)")
	}
	if p.NIC != "" && p.NICAddress != "" {
		return fieldErr("nic_address", "set either nic or nic_address, not both")
	}
	if p.NIC != "" && (len(p.NIC) > 15 || strings.ContainsAny(p.NIC, "/ \t\n:")) {
		return fieldErr("nic", "%q is not an interface name (up to 15 characters, no '/', ':' or spaces)", p.NIC)
	}
	if p.NICAddress != "" {
		if _, err := netip.ParseAddr(p.NICAddress); err != nil {
			return fieldErr("nic_address", "%q is not an IP address (e.g. 10.0.1.5 or fd00::5)", p.NICAddress)
		}
	}
	switch p.Irqbalance {
	case "", IrqbalanceStopped, IrqbalanceRunning, IrqbalanceLeave:
	default:
		return fieldErr("irqbalance", "%q: want stopped, running or leave", p.Irqbalance)
	}
	if p.IrqbalanceBannedCPUs != "" && p.Irqbalance != IrqbalanceRunning {
		return fieldErr("irqbalance_banned_cpus", "only meaningful with irqbalance: running")
	}
	q := p.Queues
	switch {
	case q.Combined < 0 || q.RX < 0 || q.TX < 0:
		return fieldErr("queues", "counts must be positive")
	case q.Combined > 0 && (q.RX > 0 || q.TX > 0):
		return fieldErr("queues", "set combined, or rx and tx, not both")
	case (q.RX > 0) != (q.TX > 0):
		return fieldErr("queues", "set rx and tx together")
	case q.Combined > 4096 || q.RX > 4096 || q.TX > 4096:
		return fieldErr("queues", "counts above 4096 are not a NIC's")
	}
	switch p.IRQSpread {
	case "", SpreadRoundRobin, SpreadShared:
	default:
		return fieldErr("irq_spread", "%q: want round-robin or shared", p.IRQSpread)
	}
	for _, a := range p.AllowOverlap {
		if normalizePair(a) == "" {
			return fieldErr("allow_overlap", "%q: want irq+server, irq+client or server+client", a)
		}
	}
	sets := map[string]cpus.List{}
	for _, f := range []struct{ name, v string }{
		{"irq_cpus", p.IRQCPUs}, {"server_cpus", p.ServerCPUs}, {"client_cpus", p.ClientCPUs},
		{"irqbalance_banned_cpus", p.IrqbalanceBannedCPUs},
	} {
		s, err := parseCPUSet(f.v)
		if err != nil {
			return fieldErr(f.name, "%v", err)
		}
		if f.v != "" && len(s) == 0 {
			return fieldErr(f.name, "empty CPU list")
		}
		sets[f.name] = s
	}
	if err := p.checkOverlaps(sets["irq_cpus"], sets["server_cpus"], sets["client_cpus"]); err != nil {
		return err
	}
	names := make([]string, 0, len(p.Sysctls))
	for k := range p.Sysctls {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !validSysctlName(k) {
			return fieldErr("sysctls", "%q is not a sysctl name (dotted, like net.core.rmem_max)", k)
		}
		v := p.Sysctls[k]
		if strings.TrimSpace(v) == "" || strings.ContainsAny(v, "\n") {
			return fieldErr("sysctls."+k, "value %q must be one non-empty line", v)
		}
	}
	return nil
}

func (p Profile) allowed(pair string) bool {
	return slices.ContainsFunc(p.AllowOverlap, func(a string) bool { return normalizePair(a) == pair })
}

// checkOverlaps refuses sets that share CPUs unless the profile allows it.
func (p Profile) checkOverlaps(irq, server, client cpus.List) error {
	for _, c := range []struct {
		pair, a, b string
		x, y       cpus.List
	}{
		{OverlapIRQServer, "irq_cpus", "server_cpus", irq, server},
		{OverlapIRQClient, "irq_cpus", "client_cpus", irq, client},
		{OverlapServerClient, "server_cpus", "client_cpus", server, client},
	} {
		if both := c.x.Intersect(c.y); len(both) > 0 && !p.allowed(c.pair) {
			return fieldErr(c.b, "overlaps %s on CPUs %s; make them disjoint or add %q to allow_overlap", c.a, both, c.pair)
		}
	}
	return nil
}

func normalizePair(s string) string {
	a, b, ok := strings.Cut(strings.ToLower(strings.TrimSpace(s)), "+")
	if !ok {
		return ""
	}
	if a > b {
		a, b = b, a
	}
	switch a + "+" + b {
	case "irq+server":
		return OverlapIRQServer
	case "client+irq":
		return OverlapIRQClient
	case "client+server":
		return OverlapServerClient
	}
	return ""
}

func validSysctlName(k string) bool {
	if k == "" || strings.HasPrefix(k, ".") || strings.HasSuffix(k, ".") || strings.Contains(k, "..") {
		return false
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' || r == '/') {
			return false
		}
	}
	return true
}

// ParseProfile reads a YAML (or JSON) profile, refusing unknown fields, and
// validates it. Errors carry the line of the offending field.
func ParseProfile(data []byte) (Profile, error) {
	var p Profile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil {
		if errors.Is(err, io.EOF) {
			return p, errors.New("empty profile")
		}
		var te *yaml.TypeError
		if errors.As(err, &te) && len(te.Errors) > 0 {
			return p, errors.New(yamlMessage(te.Errors[0]))
		}
		return p, err
	}
	if err := p.Validate(); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			fe.Line = lineOf(data, fe.Field)
		}
		return p, err
	}
	return p, nil
}

// yamlMessage turns the decoder's "line 2: field server_cpu not found in
// type tuning.Profile" into one line that lists the accepted fields.
func yamlMessage(m string) string {
	line, rest, ok := strings.Cut(m, ": ")
	if !ok {
		return m
	}
	if f, ok := strings.CutPrefix(rest, "field "); ok {
		if name, _, ok := strings.Cut(f, " not found"); ok {
			return fmt.Sprintf("%s: %s: unknown field (accepted: %s)", line, name, strings.Join(profileFields(), ", "))
		}
	}
	for typ, hint := range map[string]string{
		"tuning.Queues":     "queues: want a mapping, e.g. {combined: 4} or {rx: 2, tx: 2}",
		"[]string":          "allow_overlap: want a list, e.g. [server+client]",
		"map[string]string": "sysctls: want a mapping of names to values, e.g. {net.core.rmem_max: \"268435456\"}",
	} {
		if strings.HasSuffix(rest, "into "+typ) {
			return line + ": " + hint
		}
	}
	return line + ": " + rest
}

// profileFields lists the YAML names of Profile's fields.
func profileFields() []string {
	t := reflect.TypeFor[Profile]()
	var out []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		out = append(out, name)
	}
	return out
}

// ProfileLine returns the line of a field (as FieldError names it) in a
// profile file, or 0; the CLI uses it for errors found against the host.
func ProfileLine(data []byte, field string) int { return lineOf(data, field) }

// lineOf finds the line of a top-level key ("sysctls.x" looks up x under
// sysctls) so errors point into the file.
func lineOf(data []byte, field string) int {
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil || len(root.Content) == 0 {
		return 0
	}
	node := root.Content[0]
	line := 0
	for _, key := range strings.SplitN(field, ".", 2) {
		if node.Kind != yaml.MappingNode {
			break
		}
		found := false
		for i := 0; i+1 < len(node.Content); i += 2 {
			if node.Content[i].Value == key {
				line = node.Content[i].Line
				node = node.Content[i+1]
				found = true
				break
			}
		}
		if !found {
			break
		}
	}
	return line
}
