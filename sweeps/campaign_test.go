package sweeps

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

const goodSpec = `name: t
versions:
  - store: valkey@9.1
  - image: valkey/valkey:8.1.8
workload:
  ratio: [GET, SET]
  value-size: [1MiB, 8MiB]
  connections: 4
  threads: 2
  duration: 2s
`

// Each bad spec must fail before anything runs, naming the line and field.
func TestCampaignErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec string
		want string // file:line and a fragment
	}{
		{"unknown top field", "name: t\nversoins: []\n", "t.yaml:2:1: versoins: unknown field"},
		{"unknown workload field", goodSpec + "  conections: 4\n", "t.yaml:11:3: workload.conections: unknown field"},
		{"wrong type int", strings.Replace(goodSpec, "connections: 4", "connections: four", 1), "t.yaml:8:16: workload.connections: want a whole number"},
		{"quoted number refused", strings.Replace(goodSpec, "connections: 4", `connections: "4"`, 1), "t.yaml:8:16: workload.connections: want a whole number"},
		{"bad size in list", strings.Replace(goodSpec, "[1MiB, 8MiB]", "[1MiB, 8MiBs]", 1), "t.yaml:7:22: workload.value-size[1]: size \"8MiBs\""},
		{"size listed twice", strings.Replace(goodSpec, "[1MiB, 8MiB]", "[1MiB, 1048576]", 1), "t.yaml:7:22: workload.value-size[1]: 1MiB is listed twice"},
		{"bad ratio", strings.Replace(goodSpec, "[GET, SET]", "[GET, PUT]", 1), "t.yaml:6:16: workload.ratio[1]"},
		{"zero connections", strings.Replace(goodSpec, "connections: 4", "connections: 0", 1), "t.yaml:8:16: workload.connections: 0 connections: use 1-16384"},
		{"negative duration", strings.Replace(goodSpec, "duration: 2s", "duration: -2s", 1), "t.yaml:10:13: workload.duration: -2s: use more than 0s"},
		{"duration as number", strings.Replace(goodSpec, "duration: 2s", "duration: 2", 1), "t.yaml:10:13: workload.duration: want a duration"},
		{"threads above connections", strings.Replace(goodSpec, "threads: 2", "threads: 8", 1), "t.yaml:9:12: workload.threads: 8 threads for 4 connections"},
		{"nested list", strings.Replace(goodSpec, "[1MiB, 8MiB]", "[[1MiB]]", 1), "t.yaml:7:16: workload.value-size[0]: want a value, got a list"},
		{"empty list", strings.Replace(goodSpec, "[1MiB, 8MiB]", "[]", 1), "t.yaml:7:15: workload.value-size: empty list"},
		{"duplicate key", goodSpec + "  connections: 8\n", "t.yaml:11:3: workload.connections: given twice (first on line 8)"},
		{"two sources", strings.Replace(goodSpec, "- store: valkey@9.1", "- {store: valkey@9.1, binary: /usr/bin/valkey-server}", 1), "t.yaml:3:5: versions[0]: give exactly one of store"},
		{"bad selector", strings.Replace(goodSpec, "valkey@9.1", "valkey-9.1", 1), "t.yaml:3:12: versions[0].store: \"valkey-9.1\": use NAME@VERSION"},
		{"unquoted float version", strings.Replace(goodSpec, "store: valkey@9.1", "store: 9.1", 1), "versions[0].store: want a string, got a decimal number"},
		{"image without tag", strings.Replace(goodSpec, "valkey/valkey:8.1.8", "valkey/valkey", 1), "t.yaml:4:12: versions[1].image"},
		{"runtime on image", strings.Replace(goodSpec, "- image: valkey/valkey:8.1.8", "- {image: valkey/valkey:8.1.8, runtime: sid}", 1), "versions[1].runtime: runtime applies to store versions only"},
		{"duplicate labels", strings.Replace(goodSpec, "- image: valkey/valkey:8.1.8", "- store: valkey@9.1", 1), "t.yaml:4:5: versions[1].label: label \"valkey@9.1\" is already used"},
		{"bad io-threads", strings.Replace(goodSpec, "workload:", "server: {io-threads: 0}\nworkload:", 1), "t.yaml:5:22: server.io-threads: 0 is outside 1-128"},
		{"bad maxmemory", strings.Replace(goodSpec, "workload:", "server: {maxmemory: lots}\nworkload:", 1), "server.maxmemory: \"lots\""},
		{"args not a list", strings.Replace(goodSpec, "workload:", "server: {args: --save}\nworkload:", 1), "server.args: want a list"},
		{"unknown persistence", strings.Replace(goodSpec, "workload:", "server: {persistence: sometimes}\nworkload:", 1),
			"t.yaml:5:23: server.persistence: \"sometimes\": use none, rdb, aof-everysec or aof-always"},
		{"persistence in args too", strings.Replace(goodSpec, "workload:", "server: {persistence: rdb, args: [--appendonly, \"yes\"]}\nworkload:", 1),
			"server.args: --appendonly sets persistence, which server.persistence already says (rdb); give it once"},
		{"version persistence over campaign args", strings.Replace(strings.Replace(goodSpec, "workload:", "server: {args: [--save, \"\"]}\nworkload:", 1),
			"- store: valkey@9.1", "- {store: valkey@9.1, persistence: aof-always}", 1),
			"versions[0].args: --save sets persistence, which versions[0].persistence already says (aof-always); give it once"},
		{"tls not a bool", strings.Replace(goodSpec, "workload:", "server: {tls: maybe}\nworkload:", 1), "t.yaml:5:15: server.tls: want true or false"},
		{"bad order", "order: random\n" + goodSpec, "t.yaml:1:8: order: \"random\": use interleave or shuffle"},
		{"provider kind not a name", "provider: GCP!\n" + goodSpec, "t.yaml:1:11: provider.kind: \"GCP!\" is not a provider kind"},
		{"provider without kind", "provider: {region: x}\n" + goodSpec, "t.yaml:1:11: provider.kind: missing"},
		{"repetitions zero", "repetitions: 0\n" + goodSpec, "t.yaml:1:14: repetitions: 0 is outside 1-1000"},
		{"missing versions", "name: t\nworkload: {duration: 1s}\n", "versions: missing"},
		{"bad name", strings.Replace(goodSpec, "name: t", "name: My Campaign", 1), "t.yaml:1:7: name: \"My Campaign\""},
		{"not a mapping", "- a\n- b\n", "t.yaml:1:1: want a mapping"},
		{"not yaml", "name: [\n", "t.yaml: not YAML"},
		{"two documents", goodSpec + "---\nname: u\n", "a second YAML document"},
		{"verify too small", strings.Replace(goodSpec, "[1MiB, 8MiB]", "[8B]", 1) + "  verify: header\n", "workload.value-size: values under"},
		{"prefill word", goodSpec + "  prefill: sometimes\n", "workload.prefill: \"sometimes\": use auto"},
		{"env not mapping", strings.Replace(goodSpec, "- store: valkey@9.1", "- {store: valkey@9.1, env: [A]}", 1), "versions[0].env: want a mapping"},
		// Hostile input: each of these once hung, ran out of memory or
		// wrapped; now each is one located line.
		{"alias in provider", "provider:\n  kind: netns\n  a: &a [x, x]\n  b: [*a, *a]\n" + goodSpec, "t.yaml:4:7: provider.b[0]: alias *a: aliases are not accepted"},
		{"alias in workload", goodSpec + "  pipeline: &p 2\n  keyspace: *p\n", "t.yaml:12:13: workload.keyspace: alias *p"},
		{"cpu list endless", strings.Replace(goodSpec, "threads: 2", "threads: 2\n  cpu-list: 0-9223372036854775807", 1), "t.yaml:10:13: workload.cpu-list: cpu list \"0-9223372036854775807\": CPU 9223372036854775807 is above 8191"},
		{"server cpus huge", strings.Replace(goodSpec, "workload:", "server: {cpus: 0-2000000000}\nworkload:", 1), "t.yaml:5:16: server.cpus: cpu list \"0-2000000000\": CPU 2000000000 is above 8191"},
		{"zipf NaN", goodSpec + "  key-dist: zipf:NaN\n", "t.yaml:11:13: workload.key-dist: zipf:NaN: the exponent must be above 0 and at most 10; use"},
		{"zipf Inf", goodSpec + "  key-dist: zipf:Inf\n", "t.yaml:11:13: workload.key-dist: zipf:+Inf: the exponent must be above 0 and at most 10; use"},
		{"gaussian sd 0", goodSpec + "  key-dist: gaussian:0.5,0\n", "t.yaml:11:13: workload.key-dist: gaussian:0.5,0: the sd is a fraction of the keyspace"},
		{"ratio overflow", strings.Replace(goodSpec, "[GET, SET]", `["9223372036854775807:1"]`, 1), "t.yaml:6:11: workload.ratio[0]: ratio \"9223372036854775807:1\""},
		{"threads above bound", strings.Replace(goodSpec, "threads: 2", "threads: 20000", 1), "t.yaml:9:12: workload.threads: 20000 worker threads: use 1-1024"},
		{"connections above bound", strings.Replace(goodSpec, "connections: 4", "connections: 100000", 1), "t.yaml:8:16: workload.connections: 100000 connections: use 1-16384"},
		{"keyspace past 32 bits", goodSpec + "  keyspace: 5000000000\n", "t.yaml:11:13: workload.keyspace: 5000000000 keys: use 1-1073741824"},
		{"duration above bound", strings.Replace(goodSpec, "duration: 2s", "duration: 25h", 1), "t.yaml:10:13: workload.duration: 25h0m0s: use more than 0s and at most 24h"},
		{"server start above bound", goodSpec + "estimate: {server-start: 2000000h}\n", "t.yaml:11:26: estimate.server-start: \"2000000h\""},
		{"prefill rate below 1MB", goodSpec + "estimate: {prefill-rate: 1B}\n", "t.yaml:11:26: estimate.prefill-rate: \"1B\""},
		{"bgsave-every too often", "server: {bgsave-every: 10ms}\n" + goodSpec, "t.yaml:1:24: server.bgsave-every: \"10ms\": use a duration from 100ms to 24h0m0s"},
		{"stop-timeout too short", "server: {stop-timeout: 1ms}\n" + goodSpec, "t.yaml:1:24: server.stop-timeout: \"1ms\": use a duration from 100ms to 1h0m0s"},
		{"stop-timeout a word", "server: {stop-timeout: later}\n" + goodSpec, "t.yaml:1:24: server.stop-timeout: \"later\""},
		{"bgsave-every a word", "server: {bgsave-every: often}\n" + goodSpec, "t.yaml:1:24: server.bgsave-every: \"often\""},
		{"clients zero", "clients: 0\n" + goodSpec, "t.yaml:1:10: clients: 0 is outside 1-16"},
		{"clients past the bound", "clients: 1000\n" + goodSpec, "t.yaml:1:10: clients: 1000 is outside 1-16"},
		{"clients as text", "clients: two\n" + goodSpec, "t.yaml:1:10: clients: want a whole number"},
		{"clients above connections", "clients: 8\n" + goodSpec, "t.yaml:9:16: workload.connections: 4 connections for 8 client hosts"},
		{"calibrate word", "calibrate: sometimes\n" + goodSpec, "t.yaml:1:12: calibrate: want true, false or a mapping"},
		{"calibrate duration", "calibrate: {duration: 2000000h}\n" + goodSpec, "t.yaml:1:23: calibrate.duration: \"2000000h\": use a duration from 200ms to 10m0s"},
		{"calibrate value size", "calibrate: {value-size: 100GiB}\n" + goodSpec, "t.yaml:1:25: calibrate.value-size: \"100GiB\""},
		{"calibrate unknown field", "calibrate: {flows: 3}\n" + goodSpec, "t.yaml:1:13: calibrate.flows: unknown field"},
		{"estimate over a year", "repetitions: 1000\n" + strings.Replace(goodSpec, "duration: 2s", "duration: 24h", 1), "t.yaml:7:3: workload: the plan's estimated wall time is 8000 days (8000 cells); at most 366"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCampaign("t.yaml", []byte(tc.spec))
			if err == nil {
				t.Fatalf("accepted:\n%s", tc.spec)
			}
			var se SpecErrors
			if !errors.As(err, &se) {
				t.Fatalf("error %T %v is not SpecErrors", err, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error:\n%v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

// Several problems are all reported, each on its own line.
func TestCampaignErrorsAll(t *testing.T) {
	spec := strings.Replace(strings.Replace(goodSpec, "connections: 4", "connections: x", 1), "duration: 2s", "duration: y", 1)
	_, err := ParseCampaign("t.yaml", []byte(spec))
	if err == nil || len(err.(SpecErrors)) != 2 {
		t.Fatalf("want two errors, got %v", err)
	}
}

func TestPlanExpansion(t *testing.T) {
	spec := `name: t
repetitions: 2
versions:
  - {store: valkey@9.1, label: v91}
  - {image: valkey/valkey:8.1.8}
workload:
  ratio: [GET, SET]
  value-size: [1MiB, 8MiB]
  connections: [8, 32]
  threads: 2
  duration: 2s
  warmup: 1s
  keyspace: 10
`
	c, err := ParseCampaign("t.yaml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	asTheTableSays(c)
	p, err := NewPlan(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Cells) != 2*2*2*2*2 || len(p.Blocks) != 4 {
		t.Fatalf("%d cells in %d blocks, want 32 in 4", len(p.Cells), len(p.Blocks))
	}
	// Blocks alternate A B | B A.
	var seq []string
	for _, b := range p.Blocks {
		seq = append(seq, versionName(b.Version))
	}
	if got := strings.Join(seq, " "); got != "A B B A" {
		t.Errorf("block order %s, want A B B A", got)
	}
	wantFirst := []string{
		"v91/GET/1MiB/c8/r1", "v91/GET/1MiB/c32/r1", "v91/GET/8MiB/c8/r1", "v91/GET/8MiB/c32/r1",
		"v91/SET/1MiB/c8/r1",
	}
	for i, id := range wantFirst {
		if p.Cells[i].ID != id {
			t.Errorf("cell %d = %s, want %s", i, p.Cells[i].ID, id)
		}
	}
	if id := p.Cells[8].ID; id != "valkey-8.1.8/GET/1MiB/c8/r1" {
		t.Errorf("cell 8 = %s", id)
	}
	if id := p.Cells[16].ID; id != "valkey-8.1.8/GET/1MiB/c8/r2" {
		t.Errorf("cell 16 = %s (round 2 starts with B)", id)
	}
	if k := p.Cells[16].Key; k != "GET/1MiB/c8" {
		t.Errorf("key = %s", k)
	}
	// GET cells prefill, SET cells do not (prefill auto).
	for _, cell := range p.Cells {
		if cell.Workload.Prefill != (cell.Workload.Ratio.Gets > 0) {
			t.Errorf("%s: prefill %v", cell.ID, cell.Workload.Prefill)
		}
		if cell.Workload.Host != "" || cell.Workload.Port != 0 {
			t.Errorf("%s: planned workload carries an address", cell.ID)
		}
	}
	// Estimate: 4 starts x 2s; per cell 1s overhead + 1s + 2s, GET prefill
	// of 10 keys at 300 MiB/s.
	want := 4*2e9 + 32*5e9 + 2*2*2*(10*(1<<20)+10*(8<<20))/float64(300<<20)*1e9
	if got := float64(p.Estimate.Total); got < want-1e6 || got > want+1e6 {
		t.Errorf("estimate %v, want %v", p.Estimate.Total, want)
	}
	// Same seed, same plan; the hash follows the workload.
	p2, _ := NewPlan(context.Background(), c, nil)
	for i := range p.Cells {
		if p.Cells[i].ID != p2.Cells[i].ID || p.Cells[i].Hash != p2.Cells[i].Hash {
			t.Fatalf("plan not stable at %d", i)
		}
	}
}

func TestPlanShuffle(t *testing.T) {
	spec := strings.Replace(goodSpec, "name: t", "name: t\norder: shuffle\nseed: 7\nrepetitions: 3", 1)
	c, err := ParseCampaign("t.yaml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	p1, _ := NewPlan(context.Background(), c, nil)
	p2, _ := NewPlan(context.Background(), c, nil)
	inPlan := func(p *Plan) string {
		ids := make([]string, len(p.Cells))
		for i, c := range p.Cells {
			ids[i] = c.ID
		}
		return strings.Join(ids, ",")
	}
	if inPlan(p1) != inPlan(p2) {
		t.Fatal("same seed gave different orders")
	}
	c.Seed = 8
	p3, _ := NewPlan(context.Background(), c, nil)
	if inPlan(p1) == inPlan(p3) {
		t.Error("a different seed gave the same order")
	}
	// Still one server start per version and round, every cell once.
	if len(p1.Blocks) != 6 || len(p1.Cells) != 24 {
		t.Errorf("%d blocks %d cells", len(p1.Blocks), len(p1.Cells))
	}
	seen := map[string]bool{}
	for _, cell := range p1.Cells {
		if seen[cell.ID] {
			t.Errorf("%s twice", cell.ID)
		}
		seen[cell.ID] = true
		if p1.Blocks[cell.Block].Version != cell.Version {
			t.Errorf("%s in a block of another version", cell.ID)
		}
	}
}

type fakeResolver map[string]Resolved

func (f fakeResolver) Resolve(_ context.Context, v VersionSpec) (Resolved, error) {
	r, ok := f[v.Selector()]
	if !ok {
		return Resolved{}, errors.New("not in store")
	}
	return r, nil
}

func TestPlanResolvedIDs(t *testing.T) {
	c, err := ParseCampaign("t.yaml", []byte(goodSpec))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(context.Background(), c, fakeResolver{
		"valkey@9.1": {Name: "valkey", Version: "9.1.2"}, "valkey/valkey:8.1.8": {Name: "valkey", Version: "8.1.8"}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Cells[0].ID != "valkey-9.1.2/GET/1MiB/r1" {
		t.Errorf("first cell %s", p.Cells[0].ID)
	}
	_, err = NewPlan(context.Background(), c, fakeResolver{
		"valkey@9.1": {Name: "valkey", Version: "8.1.8"}, "valkey/valkey:8.1.8": {Name: "valkey", Version: "8.1.8"}})
	if err == nil || !strings.Contains(err.Error(), "distinct label") {
		t.Errorf("two versions resolving alike: %v", err)
	}
	// An explicit label names the version even when resolved: two builds of
	// one version stay apart.
	c2, err := ParseCampaign("t.yaml", []byte(strings.Replace(goodSpec, "- store: valkey@9.1", "- {store: valkey@9.1, label: mine}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	p2, err := NewPlan(context.Background(), c2, fakeResolver{
		"valkey@9.1": {Name: "valkey", Version: "8.1.8"}, "valkey/valkey:8.1.8": {Name: "valkey", Version: "8.1.8"}})
	if err != nil || p2.Cells[0].ID != "mine/GET/1MiB/r1" || p2.Versions[0].Resolved.Version != "8.1.8" {
		t.Errorf("labelled: %v %+v", err, p2)
	}
	if _, err := NewPlan(context.Background(), c, fakeResolver{}); err == nil || !strings.Contains(err.Error(), "versions[0] valkey@9.1") {
		t.Errorf("unresolvable: %v", err)
	}
}

// Persistence is a setting of its own, per campaign and per version:
// the version's word wins, and a campaign that says nothing keeps the
// study's none (its args may still say it, as shipped campaigns do).
func TestCampaignPersistence(t *testing.T) {
	spec := strings.Replace(strings.Replace(goodSpec, "workload:", "server: {persistence: aof-everysec}\nworkload:", 1),
		"- image: valkey/valkey:8.1.8", "- {image: valkey/valkey:8.1.8, persistence: aof-always}", 1)
	c, err := ParseCampaign("t.yaml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{c.Versions[0].Server.Persistence, c.Versions[1].Server.Persistence}; got[0] != "aof-everysec" || got[1] != "aof-always" {
		t.Errorf("persistence per version %v, want [aof-everysec aof-always]", got)
	}
	c, err = ParseCampaign("t.yaml", []byte(goodSpec))
	if err != nil || c.Versions[0].Server.Persistence != "" {
		t.Errorf("a campaign without persistence: %q, %v", c.Versions[0].Server.Persistence, err)
	}
}

// stop-timeout is each stop step's wait, per campaign and per version;
// stopping in all may take its three steps, and never less than 30s.
func TestCampaignStopTimeout(t *testing.T) {
	spec := strings.Replace(strings.Replace(goodSpec, "workload:", "server: {stop-timeout: 20s}\nworkload:", 1),
		"- image: valkey/valkey:8.1.8", "- {image: valkey/valkey:8.1.8, stop-timeout: 2s}", 1)
	c, err := ParseCampaign("t.yaml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct{ step, bound time.Duration }{{20 * time.Second, 65 * time.Second}, {2 * time.Second, 30 * time.Second}} {
		s := c.Versions[i].Server
		if s.StopTimeout.D() != want.step || s.StopBound() != want.bound {
			t.Errorf("version %d: stop step %s, bound %s; want %s, %s", i, s.StopTimeout, s.StopBound(), want.step, want.bound)
		}
	}
}

func TestCalibrationAndClients(t *testing.T) {
	c, err := ParseCampaign("t.yaml", []byte("provider: netns\nclients: 2\ncalibrate: {duration: 3s, connections: 6}\n"+strings.Replace(goodSpec, "connections: 4", "connections: [2, 4]", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Calibrates() || c.Calibrate.Duration.D() != 3e9 || c.Calibrate.Warmup.D() != DefaultCalibrateWarmup || c.CalibrationConnections() != 6 || c.ClientCount() != 2 {
		t.Errorf("calibration %+v, %d connections, %d clients", c.Calibrate, c.CalibrationConnections(), c.ClientCount())
	}
	one, err := ParseCampaign("t.yaml", []byte("provider: netns\n"+strings.Replace(goodSpec, "connections: 4", "connections: [2, 4]", 1)))
	if err != nil {
		t.Fatal(err)
	}
	// Without a count of its own, N is the campaign's largest.
	if one.CalibrationConnections() != 4 || one.Calibrate.Duration.D() != DefaultCalibrateDuration {
		t.Errorf("default calibration: %+v, %d connections", one.Calibrate, one.CalibrationConnections())
	}
	p1, _ := NewPlan(context.Background(), one, nil)
	p2, _ := NewPlan(context.Background(), c, nil)
	if p1.Cells[0].ID != p2.Cells[0].ID || p1.Cells[0].Hash == p2.Cells[0].Hash {
		t.Errorf("the same cell from one and from two client hosts: %s %s, hashes %s %s", p1.Cells[0].ID, p2.Cells[0].ID, p1.Cells[0].Hash, p2.Cells[0].Hash)
	}
	if p2.Estimate.Calibration != 4*(4*time.Second+p2.Campaign.Estimate.CellOverhead.D()) {
		t.Errorf("calibration estimate %v", p2.Estimate.Calibration)
	}
	for _, src := range []string{"calibrate: false\nprovider: netns\n" + goodSpec, goodSpec} {
		c, err := ParseCampaign("t.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		// Skipped when asked, and on loopback (the local provider).
		asTheTableSays(c)
		if c.Calibrates() {
			t.Errorf("calibrates:\n%s", src)
		}
	}
}
