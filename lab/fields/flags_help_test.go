package fields_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/fields"
)

// No bench flag's help states two defaults: --queue-limit said "default
// 1s" in its text and pflag added "(default 0s)", the zero value Resolve
// fills in only when something is paced.
func TestFlagHelpStatesOneDefault(t *testing.T) {
	fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	var w lab.Workload
	fields.BindFlags(fs, &w)
	def := regexp.MustCompile(`default:? ([^;,)]+)`)
	for _, line := range strings.Split(fs.FlagUsages(), "\n") {
		seen := map[string]bool{}
		for _, m := range def.FindAllStringSubmatch(line, -1) {
			seen[strings.TrimSpace(m[1])] = true
		}
		if len(seen) > 1 {
			t.Errorf("two defaults in one flag's help: %s", strings.TrimSpace(line))
		}
	}
}
