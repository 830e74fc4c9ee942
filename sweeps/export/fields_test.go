package export

import (
	"strings"
	"testing"

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
