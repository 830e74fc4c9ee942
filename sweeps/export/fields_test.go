package export

import (
	"slices"
	"strings"
	"testing"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/fields"
)

// Every workload field the registry exports has its column among the
// workload columns every export starts with; a field added to lab/fields
// with a Column but no column here, or one renamed here alone, fails.
func TestEveryRegistryColumnIsExported(t *testing.T) {
	have := map[string]bool{}
	for _, c := range concat(prefixColumns, pacedWorkloadColumns, registryColumns(prefixColumns, pacedWorkloadColumns)) {
		have[c.Name] = true
	}
	for _, f := range fields.Registry {
		if f.Column == "" {
			continue // fields.TestEveryEntryIsComplete holds it to a NoColumn reason
		}
		for _, name := range strings.Split(f.Column, ",") {
			if !have[name] {
				t.Errorf("--%s: the registry names export column %q, which no export has", f.Flag, name)
			}
		}
	}
}

// A registry field whose column no export has yet is exported all the
// same, its value as its flag takes it.
func TestRegistryColumnsCoverUnnamedColumns(t *testing.T) {
	var have []column
	for _, c := range prefixColumns {
		if c.Name != "connections" {
			have = append(have, c)
		}
	}
	got := registryColumns(have, pacedWorkloadColumns)
	i := slices.IndexFunc(got, func(c column) bool { return c.Name == "connections" })
	if i < 0 {
		t.Fatalf("registry columns %v, want connections among them", got)
	}
	if v := got[i].get(&row{w: lab.Workload{Connections: 8}}); v != "8" {
		t.Errorf("connections 8 exports as %v", v)
	}
	// The generic columns never repeat a named one.
	named := map[string]bool{}
	for _, c := range concat(prefixColumns, pacedWorkloadColumns) {
		named[c.Name] = true
	}
	for _, c := range registryColumns(prefixColumns, pacedWorkloadColumns) {
		if named[c.Name] {
			t.Errorf("column %q both named and generic", c.Name)
		}
	}
}
