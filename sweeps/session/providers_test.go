package session

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/sweeps"
)

const workload = `name: t
versions:
  - {image: "valkey/valkey:9.1.0"}
workload:
  value-size: 1MB
`

// Every kind's settings are decoded from the campaign's provider block:
// what a kind does not take, a value of the wrong type, and what its
// Validate refuses are each one line with file:line:col and the field's
// path, at the value (or at the block, for a field not written).
func TestProviderSettingsErrors(t *testing.T) {
	for _, tc := range []struct{ name, block, want string }{
		{"unknown kind", "provider: gcp\n", `t.yaml:1:11: provider.kind: "gcp": use local, netns, ssh or aws`},
		{"local takes nothing", "provider: {kind: local, binary: /x}\n", "t.yaml:1:25: provider.binary: unknown field; provider accepts kind"},
		{"netns binary a number", "provider:\n  kind: netns\n  binary: 7\n", "t.yaml:3:11: provider.binary: want a string, got a number; quote it"},
		{"netns queues are the profile's", "provider:\n  kind: netns\n  queues: 2\n", "t.yaml:3:3: provider.queues: unknown field; provider accepts binary, kind"},
		{"ssh without client", "provider:\n  kind: ssh\n  server: u@h\n  key: /k\n", "t.yaml:2:3: provider.client: missing; want user@host[:port]"},
		{"ssh without user", "provider:\n  kind: ssh\n  server: 10.0.0.1\n  client: u@h\n  key: /k\n", "t.yaml:3:11: provider.server: ssh host 10.0.0.1 user: empty"},
		{"ssh bad data address", "provider:\n  kind: ssh\n  key: /k\n  client: u@h\n  server:\n    address: h\n    user: u\n    data-address: x\n", `t.yaml:8:19: provider.server.data-address: "x" is not an IP address`},
		{"ssh port is not a field", "provider:\n  kind: ssh\n  key: /k\n  client: u@h\n  server: {address: h, port: 22}\n", "t.yaml:5:24: provider.server.port: unknown field; provider.server accepts address, data-address, key, user"},
		{"ssh server a list", "provider:\n  kind: ssh\n  key: /k\n  client: u@h\n  server: [a, b]\n", "t.yaml:5:11: provider.server: want a mapping of fields, got a list"},
		{"aws without instance type", "provider: {kind: aws}\n", "t.yaml:1:11: provider.instance-type: missing"},
		{"aws count", "provider:\n  kind: aws\n  instance-type: c7i.large\n  count: 3\n", "t.yaml:4:10: provider.count: 3 instances are a server and 2 client(s); the campaign's clients: 1 needs 2"},
		{"aws count past the bound", "provider:\n  kind: aws\n  instance-type: c7i.large\n  count: 40\n", "t.yaml:4:10: provider.count: 40: want 2-17"},
		{"aws count and clients", "clients: 4\nprovider:\n  kind: aws\n  instance-type: c7i.large\n  count: 2\n", "t.yaml:5:10: provider.count: 2 instances are a server and 1 client(s); the campaign's clients: 4 needs 5"},
		{"ssh client and clients", "provider:\n  kind: ssh\n  key: /k\n  server: u@h\n  client: u@c\n  clients: [u@c, u@d]\n", "t.yaml:6:12: provider.clients: give client (one host) or clients (a list), not both"},
		{"ssh fewer clients than the campaign's", "clients: 3\nprovider:\n  kind: ssh\n  key: /k\n  server: u@h\n  clients: [u@c, u@d]\n", "t.yaml:6:12: provider.clients: 2 client host(s) named; the campaign's clients: 3 needs 3"},
		{"ssh a client without address", "clients: 2\nprovider:\n  kind: ssh\n  key: /k\n  server: u@h\n  clients: [u@c, {user: u}]\n", "provider.clients[1].address: missing"},
		{"local has one client", "clients: 2\nprovider: local\n", "t.yaml:1:10: clients: 2 client hosts on provider local"},
		{"aws count a word", "provider:\n  kind: aws\n  instance-type: c7i.large\n  count: two\n", `t.yaml:4:10: provider.count: want a whole number, got a string "two"`},
		{"aws ssh-from", "provider:\n  kind: aws\n  instance-type: c7i.large\n  ssh-from: me\n", `t.yaml:4:13: provider.ssh-from: "me": want an address or CIDR`},
		{"aws dead-man", "provider:\n  kind: aws\n  instance-type: c7i.large\n  dead-man: soon\n", `t.yaml:4:13: provider.dead-man: "soon": want a duration`},
		{"aws dead-man short", "provider:\n  kind: aws\n  instance-type: c7i.large\n  dead-man: 5m\n", "t.yaml:4:13: provider.dead-man: 5m0s; want at least 10m"},
		{"aws zones not a list", "provider:\n  kind: aws\n  instance-type: c7i.large\n  zones: us-east-1a\n", "t.yaml:4:10: provider.zones: want a list such as [a, b], got a string"},
		{"aws price a word", "provider:\n  kind: aws\n  instance-type: c7i.large\n  hourly-usd: cheap\n", `t.yaml:4:15: provider.hourly-usd: want a number such as 3.5, got "cheap"`},
		{"aws half a key", "provider:\n  kind: aws\n  instance-type: c7i.large\n  public-key: /k.pub\n", "t.yaml:2:3: provider.private-key: give both the public and the private key file"},
		{"aws type without a size", "provider:\n  kind: aws\n  instance-type: big\n", `t.yaml:3:18: provider.instance-type: "big": want a type like c8gn.16xlarge`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "t.yaml")
			if err := os.WriteFile(file, []byte(tc.block+workload), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Default().Load(file)
			var se sweeps.SpecErrors
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v\nwant a SpecError containing %q", err, strings.Replace(tc.want, "t.yaml", file, 1))
			}
			if !strings.HasPrefix(err.Error(), file+":") {
				t.Errorf("%v does not start with the file", err)
			}
		})
	}
}

// What needs the operator's word is checked before anything is made, and
// a settings field it is about is still named with its place.
func TestProviderChecks(t *testing.T) {
	block := "provider:\n  kind: aws\n  instance-type: c7i.large\n  region: us-east-1\n  ssh-from: 10.0.0.0/8\n"
	c, err := sweeps.ParseCampaign("t.yaml", []byte(block+workload))
	if err != nil {
		t.Fatal(err)
	}
	keys := Operator{KeysFromEnv: true}
	keys.AWS.AccessKeyID, keys.AWS.SecretAccessKey, keys.AWS.Endpoint = "AKIDFAKE", "fake", "http://127.0.0.1:9"
	for _, tc := range []struct {
		name string
		op   Operator
		work Work
		want string
	}{
		{"no credentials", Operator{}, Work{}, "give --aws-profile NAME or --access-keys-from-env"},
		{"ssh-from too wide", keys, Work{}, "t.yaml:5:13: provider.ssh-from: 10.0.0.0/8 is wider than /24"},
		{"the flag's ssh-from", func() Operator { o := keys; o.SSHFrom = mustPrefix("198.51.0.0/16"); return o }(), Work{}, "--ssh-from: 198.51.0.0/16 is wider"},
		{"past the dead-man", func() Operator { o := keys; o.SSHFromWide = true; return o }(), Work{What: "the plan", Need: 5 * time.Hour},
			"the plan needs about 5h0m0s (estimate) plus 15m0s to bring the pair up, longer than the aws dead-man shutdown after 4h0m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(c, Options{Operator: tc.op, Work: tc.work})
			var ie *InputError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an InputError containing %q", err, tc.want)
			}
		})
	}
	ok := keys
	ok.SSHFromWide = true
	if err := Check(c, Options{Operator: ok, Work: Work{What: "the plan", Need: time.Hour}}); err != nil {
		t.Errorf("a run within the dead-man, wide ssh-from allowed: %v", err)
	}
	// Each kind brings its own estimate; the campaign's estimate block
	// stays over it.
	for kind, want := range map[string]time.Duration{"local": 2 * time.Second, "ssh": 10 * time.Second} {
		src := "provider: {kind: " + kind + "}\n"
		if kind == "ssh" {
			src = "provider: {kind: ssh, server: u@a, client: u@b, key: /k}\n"
		}
		c, err := sweeps.ParseCampaign("t.yaml", []byte(src+workload+"estimate: {cell-overhead: 9s}\n"))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := Default().settings(c); err != nil {
			t.Fatal(err)
		}
		if c.Estimate.ServerStart.D() != want || c.Estimate.CellOverhead.D() != 9*time.Second {
			t.Errorf("%s: estimate %+v, want server start %v and the campaign's 9s overhead", kind, c.Estimate, want)
		}
	}
}

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// Whether a campaign calibrates its link is the provider row's word: a
// kind whose hosts share loopback (HostsHere) has no link, the others do.
func TestLinkIsTheRowsWord(t *testing.T) {
	for _, tc := range []struct {
		block     string
		calibrate bool
	}{
		{"", false},
		{"provider: local\n", false},
		{"provider: netns\n", true},
		{"provider: netns\ncalibrate: false\n", false},
		{"provider: {kind: ssh, server: u@h, client: u@c, key: /k}\n", true},
	} {
		file := filepath.Join(t.TempDir(), "t.yaml")
		if err := os.WriteFile(file, []byte(tc.block+workload), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := Default().Load(file)
		if err != nil {
			t.Fatalf("%q: %v", tc.block, err)
		}
		if c.Calibrates() != tc.calibrate {
			t.Errorf("%q: calibrates %v, want %v", tc.block, c.Calibrates(), tc.calibrate)
		}
	}
}
