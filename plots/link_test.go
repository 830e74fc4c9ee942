package plots

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/linerate/linerate/infra/nicstats"
	"github.com/linerate/linerate/sweeps"
)

// A run whose env.json holds the calibrated link: each Gbps chart draws
// the ceiling of its own direction, the report shows the link, and a cell
// whose NIC counted an allowance exceeded is listed with its counter.
func TestCalibratedLink(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if out, err := exec.Command("cp", "-r", fixtureRun(t), dir).CombinedOutput(); err != nil {
		t.Fatalf("copy the fixture: %v: %s", err, out)
	}
	envPath := filepath.Join(dir, sweeps.EnvFile)
	var env sweeps.Environment
	b, err := os.ReadFile(envPath)
	if err == nil {
		err = json.Unmarshal(b, &env)
	}
	if err != nil {
		t.Fatal(err)
	}
	env.Link = &sweeps.Link{Connections: 32, Clients: 1, ValueSize: 8 << 20,
		GET: sweeps.LinkDirection{PerFlowGbps: 9.5, Gbps: 187.5}, SET: sweeps.LinkDirection{PerFlowGbps: 9.4, Gbps: 171.25},
		NICs: []sweeps.LinkNIC{{Host: "server", Interface: "ens5", Driver: "ena", MTU: 9001}}}
	if b, err = json.Marshal(env); err == nil {
		err = os.WriteFile(envPath, b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	run, err := sweeps.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	shaped := run.Sorted()[0]
	shaped.NIC = []sweeps.NICDelta{{NICInfo: sweeps.NICInfo{Host: "server", Interface: "ens5", Driver: "ena"},
		Deltas: nicstats.Deltas{Counters: map[string]uint64{"bw_out_allowance_exceeded": 1834, "tx_timeout": 0}}}}
	if b, err = json.Marshal(shaped); err == nil {
		err = os.WriteFile(filepath.Join(dir, sweeps.CellsDir, sweeps.CellFileName(shaped.CellID)), b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}

	c := load(t, dir)
	charts := chartsByName(c)
	for name, want := range map[string]float64{"GET-gbps": 187.5, "SET-gbps": 171.25} {
		ch := charts[name]
		if ch == nil {
			t.Fatalf("no chart %s among %v", name, keys(charts))
		}
		if len(ch.Refs) != 1 || ch.Refs[0].Y != want || !strings.Contains(ch.Refs[0].Label, "calibrated") || ch.YMax < want {
			t.Errorf("%s: refs %+v, y up to %v; want the calibrated %v", name, ch.Refs, ch.YMax, want)
		}
	}
	for name, ch := range charts {
		if !strings.HasSuffix(name, "-gbps") && len(ch.Refs) > 0 && strings.Contains(ch.Refs[0].Label, "link") {
			t.Errorf("%s draws the link", name)
		}
	}
	var html bytes.Buffer
	if err := WriteReport(&html, c, ReportOptions{Kinds: []string{"size"}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"<h3>Link</h3>", "<td class=\"num\">187.50</td>", "<td class=\"num\">9.40</td>", "server: ens5 (ena), MTU 9001",
		"allowance exceeded", shaped.CellID + "</td><td>server ens5 bw_out_allowance_exceeded &#43;1834</td>",
	} {
		if !strings.Contains(html.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// MGET and MSET charts draw the link of the direction they move data in,
// as GET and SET charts do; a mix draws the higher.
func TestLinkOfMultiKeyGroups(t *testing.T) {
	c := &Campaign{Link: &sweeps.Link{Connections: 32, GET: sweeps.LinkDirection{Gbps: 187.5}, SET: sweeps.LinkDirection{Gbps: 171.25}}}
	for op, want := range map[string]float64{"GET": 187.5, "MGET": 187.5, "SET": 171.25, "MSET": 171.25, "mix70-30": 187.5} {
		if y, _ := c.linkCeiling(&Group{Op: op}); y != want {
			t.Errorf("%s: link %v, want %v", op, y, want)
		}
	}
}
