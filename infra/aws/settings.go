package aws

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/linerate/linerate/infra"
)

// Settings are a campaign's aws provider settings (the same fields are
// `infra up`'s flags). Credentials are never among them: the caller gives
// them (a profile name or static keys) as Access. Nor is SSHFromWide:
// admitting SSH from more than a /24 (/56) is the operator's call
// (--ssh-from-wide), not a shared file's.
//
//	provider:
//	  kind: aws
//	  instance-type: c8gn.16xlarge
//	  count: 2             # instances in all: a server and its clients;
//	                       # left out, 1 + the campaign's clients: N
//	  placement: cluster   # the only placement
//	  os: al2023           # the only image family
//	  region: us-east-1
//	  zones: [us-east-1a, us-east-1b]
//	  ssh-from: 203.0.113.7/32     # at most a /24 (IPv4) or /56 (IPv6)
//	  public-key: ~/.ssh/lab.pub   # with private-key; else a key pair is created
//	  private-key: ~/.ssh/lab
//	  dead-man: 4h                 # sweep run refuses a longer plan
//	  hourly-usd: 3.5              # per instance, for the cost prompt
//	  link-gbps: 200               # the link expected; preflight holds the
//	                               # type's stated network performance to it
type Settings struct {
	InstanceType string        `yaml:"instance-type"`
	Count        int           `yaml:"count"`
	Placement    string        `yaml:"placement"`
	OS           string        `yaml:"os"`
	Region       string        `yaml:"region"`
	Zones        []string      `yaml:"zones"`
	SSHFrom      Source        `yaml:"ssh-from"`
	PublicKey    string        `yaml:"public-key"`
	PrivateKey   string        `yaml:"private-key"`
	User         string        `yaml:"user"`
	DeadMan      time.Duration `yaml:"dead-man"`
	HourlyUSD    float64       `yaml:"hourly-usd"`
	Dist         string        `yaml:"dist"`
	// LinkGbps is the link the campaign expects between its hosts, in
	// Gbps: the preflight refuses a type whose stated network
	// performance is lower, unless --allow-slower-link. 0: none stated.
	LinkGbps float64 `yaml:"link-gbps"`
}

// MaxLinkGbps bounds link-gbps: beyond it a value is a typo.
const MaxLinkGbps = 10000

// Source is where SSH may come from: a CIDR, or one address (its /32 or
// /128).
type Source struct{ netip.Prefix }

// UnmarshalText reads a CIDR or an address.
func (s *Source) UnmarshalText(b []byte) error {
	p, err := netip.ParsePrefix(string(b))
	if err != nil {
		a, aerr := netip.ParseAddr(string(b))
		if aerr != nil {
			return errors.New("want an address or CIDR, e.g. 203.0.113.7/32")
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	s.Prefix = p
	return nil
}

// Validate names the bad field (infra.FieldError). What needs the
// operator's word (ssh-from's width, credentials) is Config's to check.
func (s Settings) Validate() error {
	var errs []error
	if s.InstanceType == "" {
		errs = append(errs, infra.Fieldf("instance-type", "missing; e.g. c8gn.16xlarge"))
	}
	if s.Count != 0 && (s.Count < 2 || s.Count > 1+infra.MaxClients) {
		errs = append(errs, infra.Fieldf("count", "%d: want 2-%d (a server and 1-%d clients)", s.Count, 1+infra.MaxClients, infra.MaxClients))
	}
	if s.Placement != "" && s.Placement != "cluster" {
		errs = append(errs, infra.Fieldf("placement", "%q: want cluster", s.Placement))
	}
	if s.OS != "" && s.OS != "al2023" {
		errs = append(errs, infra.Fieldf("os", "%q: want al2023 (Amazon Linux 2023, the image the AMI parameter names)", s.OS))
	}
	if !(s.LinkGbps >= 0 && s.LinkGbps <= MaxLinkGbps) {
		errs = append(errs, infra.Fieldf("link-gbps", "%g: want 0 (none stated) to %d", s.LinkGbps, MaxLinkGbps))
	}
	for _, p := range launchProblems(s.InstanceType, s.PublicKey, s.PrivateKey, s.DeadMan, s.HourlyUSD) {
		errs = append(errs, infra.Fieldf(p.field, "%s", p.msg))
	}
	return errors.Join(errs...)
}

// Config is the pair the settings describe, reached with access a (whose
// region, when it names one, wins over the settings').
func (s Settings) Config(a Access) Config {
	if a.Region == "" {
		a.Region = s.Region
	}
	return Config{Access: a, InstanceType: s.InstanceType, Zones: s.Zones, SSHFrom: s.SSHFrom.Prefix,
		PublicKeyFile: s.PublicKey, PrivateKeyFile: s.PrivateKey, User: s.User, DeadMan: s.DeadMan,
		HourlyUSD: s.HourlyUSD, Dist: s.Dist, Instances: s.Count, LinkGbps: s.LinkGbps}
}

// Clients makes the settings launch a server and n clients, or says why
// they cannot: a count given must be 1 + n.
func (s *Settings) Clients(n int) error {
	switch {
	case s.Count == 0:
		s.Count = 1 + n
	case s.Count != 1+n:
		return infra.Fieldf("count", "%d instances are a server and %d client(s); the campaign's clients: %d needs %d (or leave count out)", s.Count, s.Count-1, n, 1+n)
	}
	return nil
}

// problem is one thing wrong with what a pair is launched with: the
// settings' field, the name Config's errors give it, and what is wrong.
type problem struct{ field, name, msg string }

// launchProblems are the checks Settings and Config share. An empty
// instance type is Settings' own to report (Config says it otherwise).
func launchProblems(instanceType, pub, priv string, deadMan time.Duration, hourly float64) []problem {
	var ps []problem
	if instanceType != "" && !strings.Contains(instanceType, ".") {
		ps = append(ps, problem{"instance-type", "instance-type", fmt.Sprintf("%q: want a type like c8gn.16xlarge", instanceType)})
	}
	if (pub == "") != (priv == "") {
		field := "public-key"
		if pub != "" {
			field = "private-key"
		}
		ps = append(ps, problem{field, "key", "give both the public and the private key file, or neither (a key pair is then created)"})
	}
	if deadMan < 0 || (deadMan > 0 && deadMan < 10*time.Minute) {
		ps = append(ps, problem{"dead-man", "dead-man", fmt.Sprintf("%v; want at least 10m", deadMan)})
	}
	if hourly < 0 {
		ps = append(ps, problem{"hourly-usd", "hourly-usd", fmt.Sprintf("%v is negative", hourly)})
	}
	return ps
}
