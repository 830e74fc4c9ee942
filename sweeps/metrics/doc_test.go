package metrics_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/linerate/linerate/sweeps/metrics"
)

var updateDoc = flag.Bool("update-doc", false, "write docs/metrics.md from the registered metrics")

const metricsDoc = "../../docs/metrics.md"

// docs/metrics.md is the table of every metric family linerate serves, made
// from the collectors' own descriptions: a metric added, renamed or
// re-described without the table fails here (go test ./sweeps/metrics
// -update-doc writes it again).
func TestMetricsDocListsEveryServedMetric(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("# Live metrics\n\n" +
		"Made from the collectors by `go test ./sweeps/metrics -run MetricsDoc -update-doc`;\n" +
		"a test fails when a served metric is missing. `bench`, `sweep run` and `soak`\n" +
		"serve them with `--metrics-listen ADDR`, `linerate agent` with its own\n" +
		"`--metrics-listen` (the server host's figures).\n\n" +
		"| metric | labels | served by | what |\n|---|---|---|---|\n")
	served := []struct {
		by string
		c  prometheus.Collector
	}{
		{"bench, sweep run, soak", metrics.NewLive()},
		{"agent", &metrics.Host{}},
		{"every --metrics-listen", collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})},
	}
	names := map[string]bool{}
	for _, n := range metrics.Names() {
		names[n] = true
	}
	for _, s := range served {
		for _, d := range describe(t, s.c) {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", d.name, labelList(d.labels), s.by, strings.ReplaceAll(d.help, "|", `\|`))
			if strings.HasPrefix(d.name, "linerate_") && !names[d.name] && !names[d.name+"_count"] {
				t.Errorf("%s is served but not in metrics.Names (the dashboard check reads it)", d.name)
			}
		}
	}
	if *updateDoc {
		if err := os.WriteFile(metricsDoc, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(metricsDoc)
	if err != nil || !bytes.Equal(got, b.Bytes()) {
		t.Errorf("docs/metrics.md is not the table the collectors make (%v); run go test ./sweeps/metrics -run MetricsDoc -update-doc\nwant:\n%s", err, b.Bytes())
	}
}

type descInfo struct {
	name, help string
	labels     []string
}

var descForm = regexp.MustCompile(`^Desc\{fqName: ("(?:[^"\\]|\\.)*"), help: ("(?:[^"\\]|\\.)*"), .*variableLabels: \{([^}]*)\}\}$`)

// describe is c's metric families, by name, read from its descriptions.
func describe(t *testing.T, c prometheus.Collector) []descInfo {
	ch := make(chan *prometheus.Desc, 64)
	go func() { c.Describe(ch); close(ch) }()
	var out []descInfo
	for d := range ch {
		m := descForm.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read %s", d)
		}
		name, _ := strconv.Unquote(m[1])
		help, _ := strconv.Unquote(m[2])
		var labels []string
		if m[3] != "" {
			labels = strings.Split(m[3], ",")
		}
		out = append(out, descInfo{name, help, labels})
	}
	slices.SortFunc(out, func(a, b descInfo) int { return strings.Compare(a.name, b.name) })
	return out
}

func labelList(ls []string) string {
	if len(ls) == 0 {
		return ""
	}
	return "`" + strings.Join(ls, "`, `") + "`"
}
