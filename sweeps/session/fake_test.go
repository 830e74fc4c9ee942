package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/netns"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/sweeps"
)

// fakeSettings are a provider's settings: one required field.
type fakeSettings struct {
	Rack string `yaml:"rack"`
}

func (s fakeSettings) Validate() error {
	if s.Rack == "" {
		return infra.Fieldf("rack", "missing; name the rack")
	}
	return nil
}

// fakeProvider is a pair on this machine's loopback that counts its Ups
// and Downs and remembers the rack it was given.
type fakeProvider struct {
	mu         sync.Mutex
	rack       string
	ups, downs int
	// steps are the row's calls in order: preflight, provider.
	steps []string
	// refuse makes the preflight fail.
	refuse bool
}

func (*fakeProvider) Kind() string { return "fake" }

func (p *fakeProvider) Up(ctx context.Context, s infra.Spec) (infra.Pair, error) {
	p.mu.Lock()
	p.ups++
	p.mu.Unlock()
	return netns.Local{}.Up(ctx, s)
}

func (p *fakeProvider) Down(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.downs++
	return nil
}

// fakeRow is the whole of the fake provider's place in a table.
func fakeRow(p *fakeProvider) *Row {
	return &Row{Kind: "fake", Hosts: HostsHere,
		Estimate: sweeps.EstimateParams{ServerStart: lab.Duration(7 * time.Second), CellOverhead: lab.Duration(time.Second), PrefillRate: 1 << 30},
		Settings: func() Settings { return &fakeSettings{} },
		Preflight: func(_ context.Context, s Settings, _ *Operator, _ string, out io.Writer) (Facts, error) {
			p.steps = append(p.steps, "preflight")
			fmt.Fprintln(out, "fake preflight: rack", s.(*fakeSettings).Rack)
			if p.refuse {
				return Facts{}, input(errors.New("fake preflight: the rack is full"))
			}
			return Facts{StatedLink: "40 Gigabit in " + s.(*fakeSettings).Rack}, nil
		},
		Provider: func(_ context.Context, s Settings, _ *Operator, _ string) (infra.Provider, error) {
			p.steps = append(p.steps, "provider")
			p.rack = s.(*fakeSettings).Rack
			return p, nil
		},
		Down: func(context.Context, PairState, string, *Operator) error { return p.Down(context.Background()) },
	}
}

// A provider row alone, in a table the test builds, is enough for a
// campaign: the session decodes its settings from the campaign (errors at
// their line), takes its estimate, brings its pair up once, runs the cells
// on it and takes it down on Close; `infra up` and `down` go through the
// same row.
func TestARowIsAProvider(t *testing.T) {
	t.Parallel()
	bin := redisBinary(t)
	p := &fakeProvider{}
	table := NewTable(fakeRow(p))
	dir := t.TempDir()
	file := filepath.Join(dir, "fake.yaml")
	src := strings.Replace(spec(bin), "name: e2e\n", "name: fake\nprovider:\n  kind: fake\n  rack: r7\n", 1)
	src = strings.Replace(src, "value-size: 1MiB", "value-size: 256KiB", 1)
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := table.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if c.Estimate.ServerStart.D() != 7*time.Second {
		t.Errorf("estimate %+v, not the row's", c.Estimate)
	}
	if _, err := Default().Load(file); err == nil || !strings.Contains(err.Error(), `provider.kind: "fake": use local, netns, ssh or aws`) {
		t.Errorf("the default table took the fake kind: %v", err)
	}
	ctx := context.Background()
	s, err := Open(ctx, c, filepath.Join(dir, "run"), Options{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := s.Run(ctx, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Done != 4 || len(sum.Failed) != 0 {
		t.Errorf("%s", sweeps.SummaryText(sum))
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if p.rack != "r7" || p.ups != 1 || p.downs != 1 {
		t.Errorf("provider got rack %q, %d ups, %d downs; want r7, 1, 1", p.rack, p.ups, p.downs)
	}
	// The preflight ran first, and env.json records what it learnt.
	if strings.Join(p.steps, ",") != "preflight,provider" {
		t.Errorf("the row's steps: %v, want the preflight before the provider", p.steps)
	}
	var env sweeps.Environment
	if b, err := os.ReadFile(filepath.Join(dir, "run", "env.json")); err != nil || json.Unmarshal(b, &env) != nil || env.StatedLink != "40 Gigabit in r7" {
		t.Errorf("env.json %v: stated_link %q, want the preflight's", err, env.StatedLink)
	}
	// A failed preflight stops Open before the run directory or the
	// provider: nothing was made.
	p.refuse, p.steps = true, nil
	if _, err := Open(ctx, c, filepath.Join(dir, "refused"), Options{Table: table}); !errors.As(err, new(*InputError)) || !strings.Contains(err.Error(), "the rack is full") {
		t.Errorf("Open with a failing preflight: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "refused")); !os.IsNotExist(err) || strings.Join(p.steps, ",") != "preflight" {
		t.Errorf("a failed preflight went on: steps %v, run directory %v", p.steps, err)
	}
	p.refuse = false
	var plan sweeps.Plan
	if b, err := os.ReadFile(filepath.Join(dir, "run", sweeps.PlanFile)); err != nil || json.Unmarshal(b, &plan) != nil ||
		len(plan.Cells) != 4 || plan.Estimate.Params.ServerStart.D() != 7*time.Second {
		t.Errorf("plan.json %v: %+v", err, plan.Estimate)
	}

	// Its settings' errors are the campaign's, with their place.
	bad := strings.Replace(src, "  rack: r7\n", "  rack: 7\n", 1)
	if err := os.WriteFile(file, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := table.Load(file); err == nil || !strings.Contains(err.Error(), file+":4:9: provider.rack: want a string") {
		t.Errorf("rack: 7: %v", err)
	}
	bad = strings.Replace(src, "  rack: r7\n", "", 1)
	if err := os.WriteFile(file, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := table.Load(file); err == nil || !strings.Contains(err.Error(), file+":3:3: provider.rack: missing; name the rack") {
		t.Errorf("no rack: %v", err)
	}

	// infra up keeps the pair's state until down.
	op := &Operator{}
	pairDir := filepath.Join(dir, "pair")
	up, err := table.Up(ctx, "fake", &fakeSettings{Rack: "r8"}, infra.Spec{Campaign: "fake", Dir: pairDir}, op)
	if err != nil || !up.Stays || len(up.Hosts) != 2 || up.Hosts[0].Addr != "127.0.0.1" || p.rack != "r8" {
		t.Fatalf("up: %+v %v", up, err)
	}
	if _, err := table.Up(ctx, "fake", &fakeSettings{Rack: "r8"}, infra.Spec{Campaign: "fake", Dir: pairDir}, op); err == nil || !strings.Contains(err.Error(), "already up") {
		t.Errorf("a second up: %v", err)
	}
	if _, err := table.Up(ctx, "fake", &fakeSettings{}, infra.Spec{Campaign: "fake", Dir: pairDir}, op); err == nil || !strings.Contains(err.Error(), "up: --rack: missing") {
		t.Errorf("up without a rack: %v", err)
	}
	if st, err := table.Down(ctx, pairDir, "fake", op); err != nil || st.Kind != "fake" || p.downs != 2 {
		t.Errorf("down: %+v %v, %d downs", st, err, p.downs)
	}
	if _, err := table.Down(ctx, pairDir, "fake", op); !errors.Is(err, ErrNothingUp) {
		t.Errorf("a second down: %v", err)
	}
}
