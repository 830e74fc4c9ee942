package sweeps

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
)

// seriesBench returns a result whose per-second series steps down at 600 s.
type seriesBench struct{ got lab.Workload }

func (b *seriesBench) Bench(_ context.Context, w lab.Workload, _ func(lab.Phase)) (*lab.Result, error) {
	b.got = w
	res := fakeResult(w, 190)
	for _, o := range res.Ops {
		for i := 0; i < int(w.Duration.D()/time.Second); i++ {
			g := 200.0 + float64(i%3)
			if i >= 600 {
				g -= 20
			}
			o.Series = append(o.Series, lab.SecondSample{Second: i + 1, Gbps: g})
		}
	}
	return res, nil
}

func TestSoak(t *testing.T) {
	dir := t.TempDir()
	r, fs, _, _ := newRunner(t, dir, testPlan(t, runSpec), nil)
	if _, err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	sb := &seriesBench{}
	s := &Soak{Store: r.Store, CellID: "B/GET/2MiB/r1", Duration: 15 * time.Minute, Servers: fs, Bench: sb}
	rec, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sb.got.Duration.D() != 15*time.Minute || sb.got.ValueSz.Max() != 2<<20 || sb.got.Host == "" {
		t.Errorf("soak workload %+v", sb.got)
	}
	d := rec.Drift[lab.OpGet]
	if rec.Status != StatusDone || d.Verdict != "step" || d.Step.At != 600 || rec.Original[lab.OpGet] != 10 {
		t.Errorf("soak record: status %s drift %+v original %v", rec.Status, d, rec.Original)
	}
	if !strings.Contains(fs.log[len(fs.log)-3], "start B") {
		t.Errorf("soak started %v", fs.log[len(fs.log)-4:])
	}
	ents, _ := os.ReadDir(filepath.Join(dir, SoakDir))
	if len(ents) != 1 || !strings.HasPrefix(ents[0].Name(), "B_GET_2MiB_r1-") {
		t.Errorf("soak dir %v", ents)
	}
	if txt := SoakText(rec); !strings.Contains(txt, "GET: held 190.00 Gbps (campaign cell 10.00); step") {
		t.Errorf("text:\n%s", txt)
	}
	if _, err := (&Soak{Store: r.Store, CellID: "nope", Duration: time.Second, Servers: fs, Bench: sb}).Run(context.Background()); err == nil ||
		!strings.Contains(err.Error(), "A/GET/1MiB/r1") {
		t.Errorf("unknown cell: %v", err)
	}
	// SoakCell only reads: the CLI checks with it before any host is up.
	if c, err := SoakCell(dir, "B/GET/2MiB/r1"); err != nil || c.CellID != "B/GET/2MiB/r1" {
		t.Errorf("SoakCell of a stored cell: %+v %v", c, err)
	}
	if _, err := SoakCell(dir, "nope"); !errors.Is(err, ErrNoSuchCell) {
		t.Errorf("SoakCell of no cell: %v", err)
	}
	missing := filepath.Join(dir, "missing")
	if _, err := SoakCell(missing, "nope"); err == nil || errors.Is(err, ErrNoSuchCell) {
		t.Errorf("SoakCell of no run directory: %v", err)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("SoakCell made %s", missing)
	}
}
