package plots

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/linerate/linerate/plots/internal/fixture"
	"github.com/linerate/linerate/sweeps"
)

// TestBrokenCampaigns renders damaged and partial run directories: each
// must draw (PNG and SVG) and tabulate without error.
func TestBrokenCampaigns(t *testing.T) {
	src := fixtureRun(t)
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string)
		check  func(t *testing.T, c *Campaign, md string)
	}{
		{"no plan", func(t *testing.T, dir string) { rm(t, dir, sweeps.PlanFile) }, func(t *testing.T, c *Campaign, md string) {
			// Without a plan, 9.1.0's GET gap is still a gap: others have those sizes.
			// Without a plan nothing says 9.1.0 was meant to run GET: its column goes.
			if !strings.Contains(md, "| 1 MB | 32 | 184 ** | 199 (c) |\n") {
				t.Errorf("GET row without plan:\n%s", md)
			}
		}},
		{"no env", func(t *testing.T, dir string) { rm(t, dir, sweeps.EnvFile) }, func(t *testing.T, c *Campaign, md string) {
			if !strings.Contains(md, "hosts not recorded") {
				t.Errorf("tables do not say the hosts are unknown:\n%s", md[:300])
			}
		}},
		{"corrupt cell", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, sweeps.CellsDir, "valkey-8.1.8_GET_4MB_r1.json"), "{not json")
		}, func(t *testing.T, c *Campaign, md string) {
			if len(c.Problems) != 1 || !strings.Contains(c.Problems[0], "valkey-8.1.8_GET_4MB_r1.json") {
				t.Errorf("problems %v, want the corrupt cell named", c.Problems)
			}
		}},
		{"only failed cells", func(t *testing.T, dir string) {
			keepOnly(t, dir, "valkey-7.2.13_SET_64MB")
		}, func(t *testing.T, c *Campaign, md string) {
			if !strings.Contains(md, "| 64 MB | failed |") {
				t.Errorf("failed cell not tabulated:\n%s", md)
			}
		}},
		// Records on disk are untrusted: JSON null where a figure should be
		// must be plotted around, never dereferenced.
		{"null figures", func(t *testing.T, dir string) {
			patchCell(t, dir, "valkey-8.1.8_GET_4MB_r1.json", func(m map[string]any) {
				m["result"].(map[string]any)["ops"] = map[string]any{"GET": nil}
			})
			patchCell(t, dir, "valkey-8.1.8_GET_8MB_r2.json", func(m map[string]any) {
				m["result"].(map[string]any)["phases"] = map[string]any{"measure": nil}
			})
			patchJSON(t, soakFile(dir), func(m map[string]any) {
				m["result"].(map[string]any)["ops"] = map[string]any{"GET": nil}
			})
		}, func(t *testing.T, c *Campaign, md string) {
			for _, p := range [][2]string{{"valkey-8.1.8_GET_4MB_r1.json", "ops.GET"}, {"valkey-8.1.8_GET_8MB_r2.json", "phases.measure"}, {"soak/", "ops.GET"}} {
				if !hasProblem(c, p[0], p[1]) {
					t.Errorf("problems %v, want %s named for %s", c.Problems, p[1], p[0])
				}
			}
			if c.Run.Cells["valkey-8.1.8/GET/4MB/r1"] != nil || len(c.Soaks) != 0 {
				t.Error("a record with a null figure was used")
			}
		}},
		{"null optional fields", func(t *testing.T, dir string) {
			patchCell(t, dir, "valkey-8.1.8_GET_8MB_r1.json", func(m map[string]any) {
				r := m["result"].(map[string]any)
				r["ops"], r["phases"], r["server"], r["errors"] = nil, nil, nil, nil
				r["client"].(map[string]any)["workers"] = []any{nil, map[string]any{"cpu": nil}}
				m["host"] = map[string]any{"server": nil, "cores": nil, "nics": []any{nil}}
				m["limit"], m["tuning"], m["history"] = nil, nil, []any{nil}
				m["version"].(map[string]any)["resolved"] = nil
			})
			patchCell(t, dir, "valkey-8.1.8_GET_8MB_r2.json", func(m map[string]any) { m["result"] = nil })
			patchCell(t, dir, "valkey-8.1.8_SET_8MB_r1.json", func(m map[string]any) {
				m["result"].(map[string]any)["ops"] = map[string]any{"SET": map[string]any{"latency_us": nil, "ttfb_us": nil, "series": []any{nil}}}
				m["host"] = map[string]any{"server": map[string]any{"threads": []any{nil}}}
			})
			patchJSON(t, soakFile(dir), func(m map[string]any) {
				m["result"].(map[string]any)["ops"].(map[string]any)["GET"].(map[string]any)["series"] = []any{nil}
				m["drift"], m["held_gbps"], m["original_gbps"], m["host"] = map[string]any{"GET": nil}, nil, map[string]any{"GET": nil}, nil
			})
			patchJSON(t, filepath.Join(dir, sweeps.EnvFile), func(m map[string]any) {
				m["hosts"] = []any{nil, map[string]any{"role": "client", "nics": []any{nil, map[string]any{"name": "eth0", "driver": "x", "speed_mbps": nil}}}}
				m["servers"] = []any{nil, map[string]any{"segment": "valkey-8.1.8", "info": nil, "resolved": nil}}
				m["linerate"], m["tuning"] = nil, nil
			})
		}, func(t *testing.T, c *Campaign, md string) {
			if len(c.Problems) != 0 || c.Run.Cells["valkey-8.1.8/GET/8MB/r1"] == nil || len(c.Soaks) != 1 {
				t.Errorf("records with null optional fields not read whole: problems %v", c.Problems)
			}
		}},
		{"one version, one cell", func(t *testing.T, dir string) {
			rm(t, dir, sweeps.PlanFile)
			keepOnly(t, dir, "valkey-9.0.4_SET_8MB_r1")
		}, func(t *testing.T, c *Campaign, md string) {
			if strings.Contains(md, "Welch") {
				t.Errorf("one version has nothing to compare, but the notes speak of marks:\n%s", md)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyRun(t, src)
			tc.damage(t, dir)
			c := load(t, dir)
			// CPU charts are many and drawn by the same code: leave them out
			// here, but describe each (that reads every thread figure).
			for _, r := range c.Run.Sorted() {
				if ch := cpuChart(c, r); ch != nil {
					_ = Describe(ch)
				}
			}
			// SVG only: the model and drawing that damaged records must not
			// break are the same for both formats; rasterizing and encoding
			// PNG (most of the time here) is TestDrawFormats'.
			w, err := Render(c, Options{Out: filepath.Join(dir, "out"), Kinds: []string{"size", "soak"}, Formats: []string{FormatSVG}})
			if err != nil {
				t.Fatal(err)
			}
			if len(w.Charts) == 0 {
				t.Fatal("no charts")
			}
			md, err := os.ReadFile(filepath.Join(dir, "out", TablesFile))
			if err != nil {
				t.Fatal(err)
			}
			var html bytes.Buffer
			if err := WriteReport(&html, c, ReportOptions{Kinds: []string{"size", "soak"}}); err != nil {
				t.Fatalf("report: %v", err)
			}
			if !strings.Contains(html.String(), "</html>") {
				t.Error("report cut short")
			}
			tc.check(t, c, string(md))
		})
	}
	t.Run("empty directory", func(t *testing.T) {
		_, err := Load(t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "no cell records") {
			t.Errorf("got %v, want an error saying there are no cell records", err)
		}
	})
}

// patchCell edits one stored cell record as JSON.
func patchCell(t *testing.T, dir, name string, edit func(map[string]any)) {
	t.Helper()
	patchJSON(t, filepath.Join(dir, sweeps.CellsDir, name), edit)
}

func patchJSON(t *testing.T, p string, edit func(map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	write(t, p, string(b))
}

func soakFile(dir string) string {
	return filepath.Join(dir, sweeps.SoakDir, strings.ReplaceAll(fixture.SoakCell, "/", "_")+"-20261130T120000Z.json")
}

// hasProblem says whether a problem names file and (when given) what.
func hasProblem(c *Campaign, file, what string) bool {
	for _, p := range c.Problems {
		if strings.Contains(p, file) && strings.Contains(p, what) {
			return true
		}
	}
	return false
}

func rm(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func keepOnly(t *testing.T, dir, prefix string) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, sweeps.CellsDir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), prefix) {
			rm(t, filepath.Join(dir, sweeps.CellsDir), e.Name())
		}
	}
	os.RemoveAll(filepath.Join(dir, sweeps.SoakDir))
}

func copyRun(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "run")
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(filepath.Join(dst, rel))
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}
