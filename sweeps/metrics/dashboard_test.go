package metrics_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/linerate/linerate/sweeps/metrics"
)

// The committed Grafana dashboard is JSON, every panel queries something,
// and every metric its queries name is one the code exports.
func TestSoakDashboardNamesOnlyExportedMetrics(t *testing.T) {
	b, err := os.ReadFile("../../docs/grafana/linerate-soak.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title      string  `json:"title"`
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name string `json:"name"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("dashboard is not JSON: %v", err)
	}
	exported := map[string]bool{}
	for _, n := range metrics.Names() {
		exported[n] = true
	}
	name := regexp.MustCompile(`\b(?:linerate|process|go)_[a-zA-Z0-9_]+`)
	var walk func([]panel) int
	walk = func(ps []panel) (n int) {
		for _, p := range ps {
			n += walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			n++
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				found := name.FindAllString(tg.Expr, -1)
				if len(found) == 0 {
					t.Errorf("panel %q: %q names no linerate metric", p.Title, tg.Expr)
				}
				// The job is the operator's choice of scrape config: a
				// variable, never a name written into the query.
				if !strings.Contains(tg.Expr, `job=~"$job"`) {
					t.Errorf("panel %q: %q does not select job=~\"$job\"", p.Title, tg.Expr)
				}
				if strings.Contains(tg.Expr, "* 8") && p.FieldConfig.Defaults.Unit != "bps" {
					t.Errorf("panel %q: a bit rate in unit %q, want bps", p.Title, p.FieldConfig.Defaults.Unit)
				}
				for _, m := range found {
					if !exported[m] {
						t.Errorf("panel %q: %s is not a metric linerate exports", p.Title, m)
					}
				}
			}
		}
		return n
	}
	if !slices.ContainsFunc(d.Templating.List, func(v struct {
		Name string `json:"name"`
	}) bool {
		return v.Name == "job"
	}) {
		t.Error("the dashboard has no job variable")
	}
	if n := walk(d.Panels); n < 5 {
		t.Errorf("%d panels in %q", n, d.Title)
	}
}

type panel struct {
	Title       string  `json:"title"`
	Type        string  `json:"type"`
	Panels      []panel `json:"panels"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}
