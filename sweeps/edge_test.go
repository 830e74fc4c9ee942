package sweeps

import (
	"bytes"
	"strings"
	"testing"
)

// sweep plan warns of cells whose requests will be too long for their
// window (issue 25): make demo's 64 MiB cells, 4 connections sharing the
// 300 MiB/s the estimate expects, take about 0.85 s a request in 4 s
// windows; its 1 MiB cells do not warn, nor does the same campaign at a
// rate that makes requests short.
func TestPlanWarnsOfWindowsTooShortForTheirRequests(t *testing.T) {
	const spec = `name: demo
versions:
  - {store: valkey@9.1, label: A}
  - {store: valkey@8.1, label: B}
workload:
  ratio: [GET, SET]
  value-size: [1MiB, 64MiB]
  connections: 4
  threads: 1
  keyspace: 8
  duration: 4s
`
	for _, tc := range []struct {
		name, extra string
		want        []string // one line each
	}{
		{"default rate", "", []string{
			"warning: GET/64MiB: a 64MiB request takes about 853ms with 4 in flight at estimate.prefill-rate 300MiB/s, 21% of the 4s window",
			"warning: SET/64MiB: a 64MiB request takes about 853ms",
		}},
		{"a fast link", "estimate: {prefill-rate: 10GiB}\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testPlan(t, spec+tc.extra)
			var out bytes.Buffer
			if err := WritePlan(&out, p); err != nil {
				t.Fatal(err)
			}
			var warnings []string
			for _, line := range strings.Split(out.String(), "\n") {
				if strings.HasPrefix(line, "warning:") {
					warnings = append(warnings, line)
				}
			}
			if len(warnings) != len(tc.want) {
				t.Fatalf("%d warnings, want %d:\n%s", len(warnings), len(tc.want), out.String())
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(warnings[i], w) || !strings.Contains(warnings[i], "-d 9s") {
					t.Errorf("warning %d:\n%s\nwant it to start %q and name -d 9s", i, warnings[i], w)
				}
			}
		})
	}
}
