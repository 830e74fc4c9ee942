package sshhost

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/linerate/linerate/infra"
)

// Provider is the ssh provider: two hosts the user already has. Up
// connects to both (pinning their keys in the campaign's known_hosts) and
// Down closes the connections; the hosts themselves are left as they were,
// apart from the uploaded binary.
type Provider struct {
	Server, Client Config
	// More are further client hosts, after Client (clients: N).
	More  []Config
	hosts []*Host
}

// Kind is "ssh".
func (*Provider) Kind() string { return "ssh" }

// Up connects to both hosts. KnownHosts defaults to <spec dir>/known_hosts.
func (p *Provider) Up(ctx context.Context, s infra.Spec) (infra.Pair, error) {
	if err := s.Validate(); err != nil {
		return infra.Pair{}, err
	}
	var hosts []infra.Host
	for i, c := range append([]Config{p.Server, p.Client}, p.More...) {
		if c.Label == "" {
			c.Label = role(i)
		}
		if c.KnownHosts == "" {
			if s.Dir == "" {
				return infra.Pair{}, fmt.Errorf("ssh provider %s: no known_hosts file and no campaign directory to keep one in", c.Label)
			}
			c.KnownHosts = filepath.Join(s.Dir, "known_hosts")
		}
		h, err := New(c)
		if err != nil {
			return infra.Pair{}, fmt.Errorf("ssh provider %s: %w", c.Label, err)
		}
		p.hosts = append(p.hosts, h)
		if err := h.Connect(ctx); err != nil {
			return infra.Pair{}, err
		}
		hosts = append(hosts, h)
	}
	pair := infra.Pair{Server: hosts[0], Client: hosts[1]}
	if len(hosts) > 2 {
		pair.Clients = hosts[1:]
	}
	return pair, nil
}

// role names host i of a pair: server, client, client-2 ….
func role(i int) string {
	switch i {
	case 0:
		return "server"
	case 1:
		return "client"
	}
	return fmt.Sprintf("client-%d", i)
}

// Down closes the connections.
func (p *Provider) Down(ctx context.Context) error {
	var errs []error
	for _, h := range p.hosts {
		errs = append(errs, h.Close())
	}
	p.hosts = nil
	return errors.Join(errs...)
}

// Settings are a campaign's ssh provider settings:
//
//	provider:
//	  kind: ssh
//	  server: ec2-user@10.0.0.1        # user@host[:port], or a mapping:
//	  client: {address: 10.0.0.2, user: ec2-user, key: ~/.ssh/lab, data-address: 172.31.0.2}
//	  key: ~/.ssh/lab                  # default key for both
//	  dist: dist                       # where make dist put the binaries
//
// With several client hosts (the campaign's clients: N), clients lists
// them instead of client: clients: [ec2-user@10.0.0.2, ec2-user@10.0.0.3].
type Settings struct {
	Server  Target   `yaml:"server"`
	Client  Target   `yaml:"client"`
	Clients []Target `yaml:"clients"`
	// Key, User, Dist and KnownHosts are the defaults of both hosts; a
	// key's leading ~/ is the home directory. KnownHosts defaults to the
	// campaign directory's known_hosts.
	Key        string `yaml:"key"`
	User       string `yaml:"user"`
	Dist       string `yaml:"dist"`
	KnownHosts string `yaml:"known-hosts"`
}

// Target is one host: written as [user@]host[:port], or as a mapping of
// these fields.
type Target struct {
	Address     string `yaml:"address"` // [user@]host[:port]
	User        string `yaml:"user"`
	Key         string `yaml:"key"`
	DataAddress string `yaml:"data-address"` // default the IP of the address
}

// UnmarshalText reads the [user@]host[:port] form.
func (t *Target) UnmarshalText(b []byte) error {
	*t = Target{Address: string(b)}
	return nil
}

// Validate names the bad field (infra.FieldError); it reads no file.
func (s Settings) Validate() error {
	_, err := s.configs()
	return err
}

// Provider is the provider the settings describe.
func (s Settings) Provider() (*Provider, error) {
	cs, err := s.configs()
	if err != nil {
		return nil, err
	}
	return &Provider{Server: cs[0], Client: cs[1], More: cs[2:]}, nil
}

// ClientCount is how many client hosts the settings name.
func (s Settings) ClientCount() int {
	if len(s.Clients) > 0 {
		return len(s.Clients)
	}
	return 1
}

// Check reads both hosts' key files, which Validate does not: a key that
// is missing or unreadable is refused before anything is tried.
func (s Settings) Check() error {
	cs, err := s.configs()
	if err != nil {
		return err
	}
	for i, c := range cs {
		if c.KnownHosts == "" {
			c.KnownHosts = "known_hosts" // filled from the campaign directory by Up
		}
		if _, err := New(c); err != nil {
			field := "server"
			switch {
			case i > 0 && len(s.Clients) > 0:
				field = fmt.Sprintf("clients[%d]", i-1)
			case i > 0:
				field = "client"
			}
			return infra.Fieldf(field, "%v", err)
		}
	}
	return nil
}

// configs are the server's Config and each client's.
func (s Settings) configs() ([]Config, error) {
	var errs []error
	type host struct {
		field string // the settings field that names it
		t     Target
	}
	hosts := []host{{"server", s.Server}}
	switch {
	case len(s.Clients) > 0 && s.Client != (Target{}):
		errs = append(errs, infra.Fieldf("clients", "give client (one host) or clients (a list), not both"))
	case len(s.Clients) > infra.MaxClients:
		errs = append(errs, infra.Fieldf("clients", "%d hosts: at most %d", len(s.Clients), infra.MaxClients))
	case len(s.Clients) > 0:
		for i, t := range s.Clients {
			hosts = append(hosts, host{fmt.Sprintf("clients[%d]", i), t})
		}
	default:
		hosts = append(hosts, host{"client", s.Client})
	}
	out := make([]Config, len(hosts))
	for i, h := range hosts {
		t, field := h.t, h.field
		c := Config{Label: role(i), KeyFile: ExpandHome(s.Key), User: s.User, Dist: s.Dist, KnownHosts: s.KnownHosts}
		switch {
		case t == Target{}:
			errs = append(errs, infra.Fieldf(field, "missing; want user@host[:port] or a mapping with address, user, key, data-address"))
			continue
		case t.Address == "":
			errs = append(errs, infra.Fieldf(field+".address", "missing; want [user@]host[:port]"))
			continue
		}
		parseTarget(t.Address, &c)
		if t.User != "" {
			c.User = t.User
		}
		if t.Key != "" {
			c.KeyFile = ExpandHome(t.Key)
		}
		if t.DataAddress != "" {
			a, err := netip.ParseAddr(t.DataAddress)
			if err != nil {
				errs = append(errs, infra.Fieldf(field+".data-address", "%q is not an IP address", t.DataAddress))
				continue
			}
			c.DataAddr = a
		}
		// Known hosts are filled by Up from the campaign directory.
		probe := c
		if probe.KnownHosts == "" {
			probe.KnownHosts = "known_hosts"
		}
		if err := probe.Validate(); err != nil {
			errs = append(errs, infra.Fieldf(field, "%v", err))
			continue
		}
		out[i] = c
	}
	return out, errors.Join(errs...)
}

// parseTarget reads [user@]host[:port].
func parseTarget(s string, c *Config) {
	if u, h, ok := strings.Cut(s, "@"); ok {
		c.User, s = u, h
	}
	c.Addr = s
}

// ExpandHome turns a leading ~/ into the user's home directory: key files
// in settings are written as a shell would take them.
func ExpandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := filepathHome(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return p
}

func filepathHome() (string, error) { return os.UserHomeDir() }
