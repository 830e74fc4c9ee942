package sweeps

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/infra"
)

// word reads itself from text and refuses "bad".
type word string

func (w *word) UnmarshalText(b []byte) error {
	if string(b) == "bad" {
		return errors.New("want a good word")
	}
	*w = word(b)
	return nil
}

// target is a value (user@host) or a mapping of its fields.
type target struct {
	Address string `yaml:"address"`
	User    string `yaml:"user"`
}

func (t *target) UnmarshalText(b []byte) error {
	t.User, t.Address, _ = strings.Cut(string(b), "@")
	return nil
}

type testSettings struct {
	Name    string        `yaml:"name"`
	Count   int           `yaml:"count"`
	Price   float64       `yaml:"price"`
	Wait    time.Duration `yaml:"wait"`
	On      bool          `yaml:"on"`
	Zones   []string      `yaml:"zones"`
	Word    word          `yaml:"word"`
	Server  target        `yaml:"server"`
	Client  target        `yaml:"client"`
	Ignored string        `yaml:"-"`
}

// Validate wants a name and a count of 2, and a client user.
func (s testSettings) Validate() error {
	var errs []error
	if s.Name == "" {
		errs = append(errs, infra.Fieldf("name", "missing"))
	}
	if s.Count != 0 && s.Count != 2 {
		errs = append(errs, infra.Fieldf("count", "%d: want 2", s.Count))
	}
	if s.Client.Address != "" && s.Client.User == "" {
		errs = append(errs, infra.Fieldf("client.user", "empty"))
	}
	return errors.Join(errs...)
}

func providerOf(t *testing.T, block string) Provider {
	t.Helper()
	c, err := ParseCampaign("p.yaml", []byte("provider:\n"+block+goodSpec))
	if err != nil {
		t.Fatal(err)
	}
	return c.Provider
}

// Settings decode from the block strictly into their types, and every
// error, the type's own Validate's included, carries file:line:col and
// the field path.
func TestProviderDecode(t *testing.T) {
	var got testSettings
	p := providerOf(t, `  kind: test
  name: n
  count: 2
  price: 3
  wait: 90m
  on: true
  zones: [a, b]
  word: good
  server: u@h
  client: {address: h2, user: v}
`)
	if err := p.Decode(&got); err != nil {
		t.Fatal(err)
	}
	want := testSettings{Name: "n", Count: 2, Price: 3, Wait: 90 * time.Minute, On: true, Zones: []string{"a", "b"},
		Word: "good", Server: target{Address: "h", User: "u"}, Client: target{Address: "h2", User: "v"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decoded %+v\nwant    %+v", got, want)
	}

	for _, tc := range []struct{ name, block, want string }{
		{"unknown key", "  kind: test\n  name: n\n  colour: red\n", "p.yaml:4:3: provider.colour: unknown field; provider accepts client, count, kind, name, on, price, server, wait, word, zones"},
		{"number for a string", "  kind: test\n  name: 9.1\n", "p.yaml:3:9: provider.name: want a string, got a decimal number; quote it"},
		{"text for a number", "  kind: test\n  name: n\n  count: two\n", "p.yaml:4:10: provider.count: want a whole number"},
		{"bad duration", "  kind: test\n  name: n\n  wait: soon\n", "p.yaml:4:9: provider.wait: \"soon\": want a duration"},
		{"infinite price", "  kind: test\n  name: n\n  price: .inf\n", "p.yaml:4:10: provider.price: want a number"},
		{"scalar for a list", "  kind: test\n  name: n\n  zones: a\n", "p.yaml:4:10: provider.zones: want a list"},
		{"list in a list", "  kind: test\n  name: n\n  zones: [[a]]\n", "p.yaml:4:11: provider.zones[0]: want a string, got a list"},
		{"refused text", "  kind: test\n  name: n\n  word: bad\n", "p.yaml:4:9: provider.word: \"bad\": want a good word"},
		{"nested unknown", "  kind: test\n  name: n\n  server: {address: h, port: 22}\n", "p.yaml:4:24: provider.server.port: unknown field; provider.server accepts address, user"},
		{"nested given twice", "  kind: test\n  name: n\n  server: {user: a, user: b}\n", "p.yaml:4:21: provider.server.user: given twice"},
		{"not settable", "  kind: test\n  name: n\n  Ignored: x\n", "p.yaml:4:3: provider.Ignored: unknown field"},
		{"validate: missing", "  kind: test\n  count: 2\n", "p.yaml:2:3: provider.name: missing"},
		{"validate: at the value", "  kind: test\n  name: n\n  count: 3\n", "p.yaml:4:10: provider.count: 3: want 2"},
		{"validate: nested, not written", "  kind: test\n  name: n\n  client: {address: h}\n", "p.yaml:4:11: provider.client.user: empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := providerOf(t, tc.block).Decode(&testSettings{})
			var se SpecErrors
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v\nwant a SpecError containing %q", err, tc.want)
			}
		})
	}
	// Two problems are two lines, each at its place.
	err := providerOf(t, "  kind: test\n  count: 3\n").Decode(&testSettings{})
	if got := err.Error(); got != "p.yaml:2:3: provider.name: missing\np.yaml:3:10: provider.count: 3: want 2" {
		t.Errorf("two problems:\n%s", got)
	}
	// A block that is only a kind, or no block at all: nothing to decode,
	// and Validate's errors name the file and the field.
	c, err := ParseCampaign("p.yaml", []byte(goodSpec))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Provider.Decode(&testSettings{}); err == nil || err.Error() != "p.yaml: provider.name: missing" {
		t.Errorf("no block: %v", err)
	}
	if err := c.Provider.Decode(testSettings{}); err == nil || !strings.Contains(err.Error(), "pointer to a struct") {
		t.Errorf("a value, not a pointer: %v", err)
	}
}

// An estimate block stays over the defaults a provider sets.
func TestSetEstimateDefaults(t *testing.T) {
	c, err := ParseCampaign("t.yaml", []byte(goodSpec+"estimate: {server-start: 7s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Estimate != (EstimateParams{ServerStart: 7e9, CellOverhead: DefaultEstimate().CellOverhead, PrefillRate: DefaultEstimate().PrefillRate}) {
		t.Errorf("parsed %+v", c.Estimate)
	}
	c.SetEstimateDefaults(EstimateParams{ServerStart: 1e9, CellOverhead: 3e9, PrefillRate: 2 << 30})
	if c.Estimate != (EstimateParams{ServerStart: 7e9, CellOverhead: 3e9, PrefillRate: 2 << 30}) {
		t.Errorf("after new defaults %+v", c.Estimate)
	}
}
