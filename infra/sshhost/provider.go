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

// FromSettings reads a campaign's provider settings:
//
//	provider:
//	  kind: ssh
//	  server: ec2-user@10.0.0.1        # user@host[:port], or a mapping:
//	  client: {address: 10.0.0.2, user: ec2-user, key: ~/.ssh/lab, data-address: 172.31.0.2}
//	  key: ~/.ssh/lab                  # default key for both
//	  dist: dist                       # where make dist put the binaries
func FromSettings(settings map[string]any) (*Provider, error) {
	p := &Provider{}
	common := Config{}
	for k, v := range settings {
		switch k {
		case "server", "client":
		case "key":
			common.KeyFile = ExpandHome(fmt.Sprint(v))
		case "user":
			common.User = fmt.Sprint(v)
		case "dist":
			common.Dist = fmt.Sprint(v)
		case "known-hosts":
			common.KnownHosts = fmt.Sprint(v)
		default:
			return nil, fmt.Errorf("provider.%s: unknown setting (accepted: server, client, key, user, dist, known-hosts)", k)
		}
	}
	for _, role := range []string{"server", "client"} {
		c := common
		switch v := settings[role].(type) {
		case string:
			if err := parseTarget(v, &c); err != nil {
				return nil, fmt.Errorf("provider.%s: %w", role, err)
			}
		case map[string]any:
			for k, x := range v {
				s := fmt.Sprint(x)
				switch k {
				case "address":
					if err := parseTarget(s, &c); err != nil {
						return nil, fmt.Errorf("provider.%s.address: %w", role, err)
					}
				case "user":
					c.User = s
				case "key":
					c.KeyFile = ExpandHome(s)
				case "data-address":
					a, err := netip.ParseAddr(s)
					if err != nil {
						return nil, fmt.Errorf("provider.%s.data-address: %q is not an IP address", role, s)
					}
					c.DataAddr = a
				default:
					return nil, fmt.Errorf("provider.%s.%s: unknown setting (accepted: address, user, key, data-address)", role, k)
				}
			}
		default:
			return nil, fmt.Errorf("provider.%s: want user@host[:port] or a mapping with address, user, key, data-address", role)
		}
		c.Label = role
		// Known hosts are filled by Up from the campaign directory.
		probe := c
		if probe.KnownHosts == "" {
			probe.KnownHosts = "known_hosts"
		}
		if err := probe.Validate(); err != nil {
			return nil, fmt.Errorf("provider.%s: %w", role, err)
		}
		if role == "server" {
			p.Server = c
		} else {
			p.Client = c
		}
	}
	return p, nil
}

// parseTarget reads [user@]host[:port].
func parseTarget(s string, c *Config) error {
	if s == "" {
		return errors.New("empty address")
	}
	if u, h, ok := strings.Cut(s, "@"); ok {
		c.User, s = u, h
	}
	c.Addr = s
	return nil
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
