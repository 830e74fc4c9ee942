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
	hosts          []*Host
}

// Kind is "ssh".
func (*Provider) Kind() string { return "ssh" }

// Up connects to both hosts. KnownHosts defaults to <spec dir>/known_hosts.
func (p *Provider) Up(ctx context.Context, s infra.Spec) (infra.Pair, error) {
	if err := s.Validate(); err != nil {
		return infra.Pair{}, err
	}
	var hosts [2]*Host
	for i, c := range []Config{p.Server, p.Client} {
		if c.Label == "" {
			c.Label = [2]string{"server", "client"}[i]
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
		hosts[i] = h
	}
	return infra.Pair{Server: hosts[0], Client: hosts[1]}, nil
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
type Settings struct {
	Server Target `yaml:"server"`
	Client Target `yaml:"client"`
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
	return &Provider{Server: cs[0], Client: cs[1]}, nil
}

// Check reads both hosts' key files, which Validate does not: a key that
// is missing or unreadable is refused before anything is tried.
func (s Settings) Check() error {
	cs, err := s.configs()
	if err != nil {
		return err
	}
	for _, c := range cs {
		if c.KnownHosts == "" {
			c.KnownHosts = "known_hosts" // filled from the campaign directory by Up
		}
		if _, err := New(c); err != nil {
			return infra.Fieldf(c.Label, "%v", err)
		}
	}
	return nil
}

// configs are the server's and the client's Config.
func (s Settings) configs() ([2]Config, error) {
	var out [2]Config
	var errs []error
	for i, role := range []string{"server", "client"} {
		t := [2]Target{s.Server, s.Client}[i]
		c := Config{Label: role, KeyFile: ExpandHome(s.Key), User: s.User, Dist: s.Dist, KnownHosts: s.KnownHosts}
		switch {
		case t == Target{}:
			errs = append(errs, infra.Fieldf(role, "missing; want user@host[:port] or a mapping with address, user, key, data-address"))
			continue
		case t.Address == "":
			errs = append(errs, infra.Fieldf(role+".address", "missing; want [user@]host[:port]"))
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
				errs = append(errs, infra.Fieldf(role+".data-address", "%q is not an IP address", t.DataAddress))
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
			errs = append(errs, infra.Fieldf(role, "%v", err))
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
