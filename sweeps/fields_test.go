package sweeps

import (
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/fields"
)

// The campaign's workload keys are the registry's: every field with a Key
// is an axis of that name, and every axis is a registry field's key, so a
// field added to lab/fields without its axis (or an axis without its
// field) fails here.
func TestAxesAreTheRegistryKeys(t *testing.T) {
	keys := map[string]bool{}
	for _, f := range fields.Registry {
		if f.Key == "" {
			continue // fields.TestEveryEntryIsComplete holds it to a NoKey reason
		}
		keys[f.Key] = true
		if _, ok := axisByName[f.Key]; !ok {
			t.Errorf("--%s: campaign key %q has no axis in axisDefs", f.Flag, f.Key)
		}
	}
	for _, a := range axisDefs {
		if !keys[a.name] {
			t.Errorf("axis %q is no registry field's campaign key", a.name)
		}
	}
}

// A registry field with a campaign key but no named axis still is an
// axis: its values read as its flag reads them and land in the workload.
func TestRegistryAxesCoverUnnamedKeys(t *testing.T) {
	var named []axisDef
	for _, a := range namedAxes {
		if a.name != "connections" && a.name != "rate" {
			named = append(named, a)
		}
	}
	got := map[string]axisDef{}
	for _, a := range registryAxes(named) {
		got[a.name] = a
	}
	if _, ok := got["connections"]; !ok {
		t.Fatalf("registry axes %v, want connections and rate among them", got)
	}
	if _, ok := got["rate"]; !ok {
		t.Fatalf("registry axes %v, want connections and rate among them", got)
	}
	for _, a := range namedAxes {
		if a.name != "connections" && a.name != "rate" && got[a.name].name != "" {
			t.Errorf("axis %q both named and generic", a.name)
		}
	}
	for _, tc := range []struct {
		key, value, segment string
		check               func(w lab.Workload) bool
	}{
		{"connections", "8", "connections-8", func(w lab.Workload) bool { return w.Connections == 8 }},
		{"rate", "20Gbps", "rate-20Gbps", func(w lab.Workload) bool { return w.Rate.String() == "20Gbps" }},
	} {
		a := got[tc.key]
		v, err := a.parse(&yaml.Node{Kind: yaml.ScalarNode, Value: tc.value})
		if err != nil {
			t.Fatalf("%s %s: %v", tc.key, tc.value, err)
		}
		var w lab.Workload
		a.apply(&w, v)
		if !tc.check(w) || a.format(v) != tc.value || a.segment(v) != tc.segment {
			t.Errorf("%s %s: workload %+v, format %q, segment %q", tc.key, tc.value, w, a.format(v), a.segment(v))
		}
	}
	if _, err := got["connections"].parse(&yaml.Node{Kind: yaml.ScalarNode, Value: "many"}); err == nil {
		t.Error("connections: many parsed")
	}
}
