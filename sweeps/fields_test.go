package sweeps

import (
	"testing"

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
