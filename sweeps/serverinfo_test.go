package sweeps

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
)

func TestMemorySampleFromInfo(t *testing.T) {
	m := memorySample(map[string]string{"used_memory": "1048576", "used_memory_rss": "6705152", "mem_fragmentation_ratio": "7.65",
		"mem_allocator": "jemalloc-5.3.0", "allocator_allocated": "1200000", "allocator_frag_ratio": "1.08", "allocator_name": "x",
		"db0": "keys=500,expires=0,avg_ttl=0", "db3": "keys=12,expires=1,avg_ttl=0"})
	if m.UsedMemory != 1<<20 || m.UsedMemoryRSS != 6705152 || m.FragRatio != 7.65 || m.Keys != 512 || m.Allocator != "jemalloc-5.3.0" ||
		m.AllocatorStats["allocator_allocated"] != 1.2e6 || m.AllocatorStats["allocator_frag_ratio"] != 1.08 || len(m.AllocatorStats) != 2 {
		t.Errorf("%+v", m)
	}
}

// What a key cost is Δused_memory / Δkeys from before the prefill to
// after the cell, both settled; never negative: a before-value taken with
// keys present (issue 25: -92 bytes a key after a FLUSHALL still freeing),
// no key added, a Δ that is not positive or an unsettled server is "not
// measurable" with the reason.
func TestMemoryRecord(t *testing.T) {
	const mib = 1 << 20
	before := &MemorySample{UsedMemory: 900_000}
	prefilled := &MemorySample{UsedMemory: 900_000 + 64*1_401_005, Keys: 64} // the bench's buffers in it
	cell := &MemorySample{UsedMemory: 900_000 + 64*1_153_434, Keys: 64}      // 1.1 MiB
	for _, tc := range []struct {
		name                string
		before, after, cell *MemorySample
		unsettled           string
		perKey              float64
		why                 string
	}{
		{"after the cell, not the prefill", before, prefilled, cell, "", 1_153_434, ""},
		{"without a prefill mark", before, nil, cell, "", 1_153_434, ""},
		{"no key added", before, nil, &MemorySample{UsedMemory: 2_000_000}, "", 0, "added no key"},
		{"nothing before", nil, prefilled, cell, "", 0, "could not be read"},
		{"keys before", &MemorySample{UsedMemory: 35_300_000, Keys: 3}, nil, cell, "", 0, "3 keys were there before"},
		{"memory fell", &MemorySample{UsedMemory: 80_000_000}, nil, cell, "", 0, "used_memory did not grow (-5280224 bytes for 64 keys added)"},
		{"unsettled", before, nil, cell, "2 client connections besides the runner's", 0, "2 client connections"},
	} {
		m := memoryRecord(tc.before, tc.after, tc.cell, mib, tc.unsettled)
		if math.Abs(m.BytesPerKey-tc.perKey) > 1 || m.BytesPerKey < 0 || (tc.perKey > 0) != (m.BytesPerKeyFrom == "cell") {
			t.Errorf("%s: %v bytes per key from %q, want %v", tc.name, m.BytesPerKey, m.BytesPerKeyFrom, tc.perKey)
		}
		if (tc.why == "") != (m.NotMeasurable == "") || !strings.Contains(m.NotMeasurable, tc.why) {
			t.Errorf("%s: not measurable %q, want %q", tc.name, m.NotMeasurable, tc.why)
		}
		if want := tc.perKey/mib - 1; tc.perKey > 0 && math.Abs(m.Overhead-want) > 1e-9 {
			t.Errorf("%s: overhead %v, want %v", tc.name, m.Overhead, want)
		}
	}
}

// A settled read has no client but the runner's and nothing left to free.
func TestUnsettled(t *testing.T) {
	for _, tc := range []struct {
		f    map[string]string
		want string
	}{
		{map[string]string{"connected_clients": "1", "lazyfree_pending_objects": "0"}, ""},
		{map[string]string{"connected_clients": "1"}, ""}, // no lazy free reported
		{map[string]string{"connected_clients": "9", "lazyfree_pending_objects": "0"}, "8 client connections besides the runner's"},
		{map[string]string{"connected_clients": "1", "lazyfree_pending_objects": "32"}, "32 objects waiting to be freed"},
	} {
		if got := unsettled(tc.f); got != tc.want {
			t.Errorf("unsettled(%v) = %q, want %q", tc.f, got, tc.want)
		}
	}
	k := KeyMemoryOf([]int64{1_052_700, 1_052_740, 1_052_720})
	if k.Keys != 3 || k.MinBytes != 1_052_700 || k.MaxBytes != 1_052_740 || k.MeanBytes != 1_052_720 {
		t.Errorf("KeyMemoryOf: %+v", k)
	}
}

// Samples fall into the window's seconds as the result's series number
// them; forks are counted against the sample before, also one taken
// before the window opened.
func TestPersistenceSeries(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int, f map[string]string) InfoSample {
		return InfoSample{At: start.Add(time.Duration(ms) * time.Millisecond), Fields: f}
	}
	f := func(forks int, rewriting int, latest int) map[string]string {
		return map[string]string{"total_forks": fmt.Sprint(forks), "aof_rewrite_in_progress": fmt.Sprint(rewriting),
			"rdb_bgsave_in_progress": "0", "latest_fork_usec": fmt.Sprint(latest), "aof_rewrites": fmt.Sprint(forks)}
	}
	samples := []InfoSample{
		at(-300, f(5, 0, 100)),
		at(200, f(5, 0, 100)),
		at(700, f(6, 1, 1234)),
		at(1400, f(6, 0, 1234)),
		at(2100, f(8, 1, 2000)),
		at(2600, f(8, 0, 2000)),
		at(3200, f(9, 0, 900)), // after the window: left out
	}
	got := persistenceSeries(samples, nil, start, 3)
	want := []struct {
		samples, forks int
		rewriting      bool
		latest         int64
	}{{2, 1, true, 1234}, {1, 0, false, 1234}, {2, 2, true, 2000}}
	if len(got) != len(want) {
		t.Fatalf("%d seconds, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Second != i || g.Samples != w.samples || g.Forks == nil || *g.Forks != int64(w.forks) || g.AOFRewriteInProgress != w.rewriting ||
			g.LatestForkUsec != w.latest || g.TotalForks == nil || g.AOFRewrites == nil || g.RDBSaves != nil {
			t.Errorf("second %d: %+v, want %+v", i, g, w)
		}
	}
	// A second no sample fell in is left out, not made up.
	if got := persistenceSeries([]InfoSample{at(100, f(1, 0, 0)), at(2100, f(1, 0, 0))}, nil, start, 3); len(got) != 2 || got[1].Second != 2 {
		t.Errorf("a second without samples: %+v", got)
	}
	// The closing read, taken as the bench returned after the window,
	// counts into the last second what began after the last read inside
	// the window: here a starved host read only in second 0, and a fork
	// in second 1 is still counted, with its duration.
	closing := at(2040, f(2, 0, 3100))
	got = persistenceSeries([]InfoSample{at(-200, f(1, 0, 0)), at(300, f(1, 0, 0))}, &closing, start, 2)
	if len(got) != 2 || got[0].Second != 0 || *got[0].Forks != 0 || got[1].Second != 1 || got[1].Samples != 1 ||
		*got[1].Forks != 1 || got[1].LatestForkUsec != 3100 || *ForksIn(got) != 1 {
		t.Errorf("with a closing read after a starved second: %+v", got)
	}
	// A closing read that falls inside the window is an ordinary read
	// there; without reads in the window it still counts against the
	// read before it opened.
	closing = at(1500, f(3, 0, 10))
	if got := persistenceSeries([]InfoSample{at(-100, f(1, 0, 0))}, &closing, start, 3); len(got) != 1 || got[0].Second != 1 || *got[0].Forks != 2 {
		t.Errorf("a closing read inside the window: %+v", got)
	}
	// The slice of reads is not written to: the watcher may still hold it.
	reads := make([]InfoSample, 1, 2)
	reads[0] = at(100, f(1, 0, 0))
	closing = at(1200, f(2, 0, 0))
	persistenceSeries(reads, &closing, start, 1)
	if reads[:2][1].Fields != nil {
		t.Errorf("persistenceSeries appended the closing read into its caller's slice")
	}
	// A server that counts no forks says nothing of them.
	if got := persistenceSeries([]InfoSample{at(100, map[string]string{"rdb_bgsave_in_progress": "1"})}, nil, start, 1); len(got) != 1 ||
		got[0].Forks != nil || got[0].TotalForks != nil || !got[0].RDBBgsaveInProgress {
		t.Errorf("without total_forks: %+v", got)
	}
}

// infoServer is a fakeServer that answers INFO: its memory grows by
// 1.1 MiB a key and it forks once a second.
type infoServer struct {
	*fakeServer
	mu    sync.Mutex
	keys  int64
	reads map[string]int
	born  time.Time
}

func (s *infoServer) SampleInfo(_ context.Context, sections ...string) (InfoSample, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	f := map[string]string{}
	for _, sec := range sections {
		s.reads[sec]++
		switch sec {
		case "memory":
			f["used_memory"] = fmt.Sprint(1_000_000 + s.keys*1_153_434) // 1.1 MiB a key
		case "keyspace":
			if s.keys > 0 {
				f["db0"] = fmt.Sprintf("keys=%d,expires=0,avg_ttl=0", s.keys)
			}
		case "stats":
			f["total_forks"] = fmt.Sprint(int64(now.Sub(s.born) / time.Second))
			f["latest_fork_usec"] = "700"
		case "persistence":
			f["aof_rewrite_in_progress"] = "0"
			f["rdb_bgsave_in_progress"] = "0"
		}
	}
	return InfoSample{At: now, Fields: f}, nil
}

type infoStarter struct {
	fakeStarter
	srv *infoServer
}

func (f *infoStarter) Start(ctx context.Context, v PlanVersion, dir string) (RunningServer, error) {
	s, err := f.fakeStarter.Start(ctx, v, dir)
	if err != nil {
		return nil, err
	}
	f.srv = &infoServer{fakeServer: s.(*fakeServer), reads: map[string]int{}, born: time.Now()}
	return f.srv, nil
}

// prefillBench writes the keyspace at the warmup mark, as the engine's
// prefill ends, then runs a window of the workload's length.
type prefillBench struct{ starter *infoStarter }

func (b prefillBench) Bench(ctx context.Context, w lab.Workload, mark func(lab.Phase)) (*lab.Result, error) {
	srv := b.starter.srv
	srv.mu.Lock()
	srv.keys = int64(w.Keyspace)
	srv.mu.Unlock()
	mark(lab.PhaseWarmup)
	start := time.Now()
	mark(lab.PhaseMeasure)
	time.Sleep(w.Duration.D())
	mark(lab.PhaseDrain)
	res := fakeResult(w, 1)
	res.Window.Start, res.Ended = &start, time.Now()
	return res, nil
}

// The runner reads the server's memory around every cell and, for a
// version that persists, its fork activity per second of the window.
func TestRunnerSamplesServerInfo(t *testing.T) {
	for _, persistence := range []string{"", "aof-always"} {
		t.Run("persistence "+persistence, func(t *testing.T) {
			spec := "name: rt\nversions:\n  - {store: valkey@9.1, label: A}\nworkload:\n  ratio: GET\n  value-size: 1MiB\n  connections: 2\n" +
				"  threads: 1\n  keyspace: 8\n  prefill: true\n  duration: 2s\n"
			if persistence != "" {
				spec += "server: {persistence: " + persistence + "}\n"
			}
			p := testPlan(t, spec)
			dir := t.TempDir()
			st, err := OpenStore(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			starter := &infoStarter{}
			r := &Runner{Plan: p, Store: st, Servers: starter, Bench: prefillBench{starter}}
			if _, err := r.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			run, err := ReadRun(dir)
			if err != nil {
				t.Fatal(err)
			}
			rec := run.Cells[p.Cells[0].ID]
			if rec == nil || rec.Status != StatusDone {
				t.Fatalf("cell %+v", rec)
			}
			m := rec.Memory
			if m == nil || m.BeforePrefill == nil || m.AfterPrefill == nil || m.AfterCell == nil || m.BytesPerKeyFrom != "cell" ||
				math.Abs(m.BytesPerKey-1.1*(1<<20)) > 1 || math.Abs(m.Overhead-0.1) > 1e-6 {
				t.Fatalf("memory %+v", m)
			}
			switch {
			case persistence == "" && (rec.Persistence != nil || starter.srv.reads["stats"] > 0):
				t.Errorf("persistence none, yet %d fork seconds and %d INFO stats reads", len(rec.Persistence), starter.srv.reads["stats"])
			case persistence != "" && len(rec.Persistence) < 1:
				t.Errorf("persistence %s: no fork series", persistence)
			case persistence != "":
				var forks int64
				for _, s := range rec.Persistence {
					if s.Forks != nil {
						forks += *s.Forks
					}
				}
				if forks < 1 || rec.Persistence[0].LatestForkUsec != 700 {
					t.Errorf("fork series %+v: %d forks over the window", rec.Persistence, forks)
				}
			}
		})
	}
}

// A cell with persistence that began no fork in its window says so
// (forks: 0 and a note why), never passes as having measured it.
func TestForkSummary(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name  string
		ps    []PersistenceSecond
		asked int
		errs  []string
		forks *int64
		note  string
	}{
		{"forked", []PersistenceSecond{{Forks: n(0)}, {Forks: n(1)}}, 1, nil, n(1), ""},
		{"not counted", []PersistenceSecond{{}}, 0, nil, nil, ""},
		{"no fork, none asked", []PersistenceSecond{{Forks: n(0)}, {Forks: n(0)}}, 0, nil, n(0), "set server.bgsave-every"},
		{"no fork, asked", []PersistenceSecond{{Forks: n(0)}}, 2, []string{"BGSAVE on x: ERR busy"}, n(0), "none of the 2 BGSAVEs asked for forked inside it (BGSAVE on x: ERR busy)"},
		{"no snapshotter", []PersistenceSecond{{Forks: n(0)}}, 0, []string{"the server cannot be asked for BGSAVE"}, n(0), "cannot be asked"},
		{"forked but a BGSAVE failed", []PersistenceSecond{{Forks: n(2)}}, 3, []string{"timeout"}, n(2), "BGSAVE: timeout"},
	} {
		forks, note := forkSummary(tc.ps, tc.asked, tc.errs)
		if (forks == nil) != (tc.forks == nil) || (forks != nil && *forks != *tc.forks) {
			t.Errorf("%s: forks %v, want %v", tc.name, forks, tc.forks)
		}
		if (tc.note == "") != (note == "") || !strings.Contains(note, tc.note) {
			t.Errorf("%s: note %q, want one with %q", tc.name, note, tc.note)
		}
	}
}

// No BGSAVE is asked in the last half period of the measured window or
// after it, so the read that closes the window cannot count a fork the
// runner began after it; before the window opens the schedule runs free.
func TestBGSaveDue(t *testing.T) {
	end := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		now   time.Time
		end   time.Time
		every time.Duration
		want  bool
	}{
		{"window not open", end.Add(time.Hour), time.Time{}, time.Second, true},
		{"rdb's mid-window snapshot (2 s window)", end.Add(-time.Second), end, time.Second, true},
		{"rdb's second, as the window ends", end, end, time.Second, false},
		{"a late timer after the window", end.Add(30 * time.Millisecond), end, time.Second, false},
		{"within the last half period", end.Add(-400 * time.Millisecond), end, time.Second, false},
		{"just before the last half period", end.Add(-501 * time.Millisecond), end, time.Second, true},
		{"bgsave-every 700ms at 1.4 s of 2 s", end.Add(-600 * time.Millisecond), end, 700 * time.Millisecond, true},
	} {
		if got := bgsaveDue(tc.now, tc.end, tc.every); got != tc.want {
			t.Errorf("%s: due %v, want %v", tc.name, got, tc.want)
		}
	}
}

// persistence rdb snapshots once in the middle of the window unless
// bgsave-every says how often; other settings never.
func TestBGSaveEvery(t *testing.T) {
	w := lab.Workload{Duration: lab.Duration(4 * time.Second)}
	for _, tc := range []struct {
		s    ServerSettings
		want time.Duration
	}{
		{ServerSettings{Persistence: "rdb"}, 2 * time.Second},
		{ServerSettings{Persistence: "rdb", BGSaveEvery: lab.Duration(time.Second)}, time.Second},
		{ServerSettings{BGSaveEvery: lab.Duration(700 * time.Millisecond)}, 700 * time.Millisecond},
		{ServerSettings{Persistence: "aof-everysec"}, 0},
		{ServerSettings{}, 0},
	} {
		if got := bgsaveEvery(tc.s, w); got != tc.want {
			t.Errorf("%+v: every %s, want %s", tc.s, got, tc.want)
		}
		if persists(tc.s) != (tc.want > 0 || tc.s.Persistence == "aof-everysec") {
			t.Errorf("%+v: persists %v", tc.s, persists(tc.s))
		}
	}
}
