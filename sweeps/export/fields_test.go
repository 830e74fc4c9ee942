package export

import (
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
	for _, c := range concat(prefixColumns, pacedWorkloadColumns) {
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
	if len(got) != 1 || got[0].Name != "connections" {
		t.Fatalf("registry columns %v, want connections alone", got)
	}
	if v := got[0].get(&row{w: lab.Workload{Connections: 8}}); v != "8" {
		t.Errorf("connections 8 exports as %v", v)
	}
	if extra := registryColumns(prefixColumns, pacedWorkloadColumns); len(extra) != 0 {
		t.Errorf("columns added beside the named ones: %v", extra)
	}
}
