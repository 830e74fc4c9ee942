package aws

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// FromSettings reads a campaign's aws provider settings into a Config.
// Credentials are never read from a campaign file: the caller adds them
// (a profile name or static keys) to Config.Access. Nor is SSHFromWide:
// admitting SSH from more than a /24 (/56) is the operator's call
// (--ssh-from-wide), not a shared file's.
//
//	provider:
//	  kind: aws
//	  instance-type: c8gn.16xlarge
//	  count: 2             # a server and a client: the only count
//	  placement: cluster   # the only placement
//	  os: al2023           # the only image family
//	  region: us-east-1
//	  zones: [us-east-1a, us-east-1b]
//	  ssh-from: 203.0.113.7/32     # at most a /24 (IPv4) or /56 (IPv6)
//	  public-key: ~/.ssh/lab.pub   # with private-key; else a key pair is created
//	  private-key: ~/.ssh/lab
//	  dead-man: 4h                 # sweep run refuses a longer plan
//	  hourly-usd: 3.5              # per instance, for the cost prompt
func FromSettings(settings map[string]any) (Config, error) {
	var c Config
	for k, v := range settings {
		s := strings.TrimSpace(fmt.Sprint(v))
		bad := func(want string) error {
			return fmt.Errorf("provider.%s: %q: want %s", k, s, want)
		}
		switch k {
		case "instance-type":
			c.InstanceType = s
		case "count":
			if s != "2" {
				return c, bad("2 (a server and a client)")
			}
		case "placement":
			if s != "cluster" {
				return c, bad("cluster")
			}
		case "os":
			if s != "al2023" {
				return c, bad("al2023 (Amazon Linux 2023, the image the AMI parameter names)")
			}
		case "region":
			c.Region = s
		case "zones":
			list, ok := v.([]any)
			if !ok {
				return c, bad("a list of zones, e.g. [us-east-1a, us-east-1b]")
			}
			for _, z := range list {
				c.Zones = append(c.Zones, fmt.Sprint(z))
			}
		case "ssh-from":
			p, err := netip.ParsePrefix(s)
			if err != nil {
				a, aerr := netip.ParseAddr(s)
				if aerr != nil {
					return c, bad("an address or CIDR, e.g. 203.0.113.7/32")
				}
				p = netip.PrefixFrom(a, a.BitLen())
			}
			c.SSHFrom = p
		case "public-key":
			c.PublicKeyFile = s
		case "private-key":
			c.PrivateKeyFile = s
		case "user":
			c.User = s
		case "dead-man":
			d, err := time.ParseDuration(s)
			if err != nil {
				return c, bad("a duration, e.g. 4h")
			}
			c.DeadMan = d
		case "hourly-usd":
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return c, bad("a price in dollars, e.g. 3.5")
			}
			c.HourlyUSD = f
		case "dist":
			c.Dist = s
		default:
			return c, fmt.Errorf("provider.%s: unknown setting for aws (accepted: instance-type, count, placement, os, region, zones, ssh-from, public-key, private-key, user, dead-man, hourly-usd, dist)", k)
		}
	}
	if c.InstanceType == "" {
		return c, fmt.Errorf("provider.instance-type: missing; e.g. c8gn.16xlarge")
	}
	return c, nil
}
