package start

import (
	"context"
	"fmt"
	"github.com/linerate/linerate/lab/bench"
	"strconv"
	"strings"
	"testing"

	"github.com/linerate/linerate/sweeps"
)

// versionLine is one campaign version: Debian's redis-server by path, or
// a store version (installed into the user's store when missing).
func versionLine(t *testing.T, which string) string {
	if which == "redis" {
		return "{binary: " + redisBinary(t) + ", label: redis-deb}"
	}
	return "{store: " + which + ", runtime: sid}"
}

// aof-always at 1 MiB SETs: the cells complete, the server really runs
// with appendonly yes and appendfsync always, and every second of the
// window carries the fork fields. The rewrite size is lowered from the
// servers' 64 MB to 4 MB, so the AOF reaches it within the window at any
// rate above ~2 MB/s (a loaded run wrote 71 MB in all at 64 MB's, and
// its rewrite came after the window): rewrites fork during the window,
// and the series counts them.
func TestRealPersistenceAOFAlways(t *testing.T) {
	t.Parallel()
	for _, which := range []string{"redis", "valkey@9.1"} {
		t.Run(which, func(t *testing.T) {
			src := `name: aof
server: {persistence: aof-always, maxmemory: 256mb, args: [--auto-aof-rewrite-min-size, 4mb]}
versions:
  - ` + versionLine(t, which) + `
workload:
  ratio: SET
  value-size: 1MiB
  connections: 2
  threads: 1
  keyspace: 8
  warmup: 200ms
  duration: 3s
`
			dir := t.TempDir()
			run := runAll(t, plan(t, src, nil), dir, &Starter{Install: true}, bench.Bencher{})
			if info := run.Env.Servers[0].Info; info["config:appendonly"] != "yes" || info["config:appendfsync"] != "always" || info["config:save"] != "" {
				t.Errorf("the server runs with appendonly %q, appendfsync %q, save %q", info["config:appendonly"], info["config:appendfsync"], info["config:save"])
			}
			for _, rec := range run.Sorted() {
				if len(rec.Persistence) < 2 {
					t.Fatalf("%s: %d seconds of fork activity, want one per second of the 3 s window: %+v", rec.CellID, len(rec.Persistence), rec.Persistence)
				}
				var forks int64
				for i, s := range rec.Persistence {
					if s.TotalForks == nil || s.Forks == nil || s.Samples < 1 || s.Second < 0 || s.Second >= len(rec.Result.Ops["SET"].Series) ||
						(i > 0 && s.Second <= rec.Persistence[i-1].Second) {
						t.Errorf("%s: second %+v lacks the fork fields or falls outside the bench's series", rec.CellID, s)
						continue
					}
					forks += *s.Forks
				}
				if forks < 1 || rec.Persistence[len(rec.Persistence)-1].LatestForkUsec <= 0 {
					t.Errorf("%s: %d forks in the window, latest fork %d µs; an AOF growing past 4 MB should have been rewritten",
						rec.CellID, forks, rec.Persistence[len(rec.Persistence)-1].LatestForkUsec)
				}
				t.Logf("%s: %.2f Gbps, %d forks in %d seconds, latest fork %d µs", rec.CellID, rec.Result.Ops["SET"].Gbps, forks,
					len(rec.Persistence), rec.Persistence[len(rec.Persistence)-1].LatestForkUsec)
			}
		})
	}
}

// persistence: rdb in a short cell (issue 25: 0 forks in every cell of a
// campaign, the save schedule never firing within a minute): the runner
// forces BGSAVE inside the window, so the cell forks at least once and
// its record says how many, with the fork's duration; bgsave-every sets
// the schedule, also without rdb. The fork is counted by the read that
// closes the window, so half-second reads a starved machine delays or
// misses lose none (two runs of make test once read nothing in the
// second that forked). The windows leave each BGSAVE asked at least 1.5 s
// before the schedule stops asking (bgsaveDue), which a client stalled
// that long would miss: rdb's one, at half the window, in 6 s; every
// 700 ms of 3 s, three.
func TestRealRDBForksInAShortCell(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ which, server, duration string }{
		{"redis", "{persistence: rdb, maxmemory: 256mb}", "6s"},
		{"valkey@9.1", "{persistence: rdb, maxmemory: 256mb}", "6s"},
		{"redis", "{bgsave-every: 700ms, maxmemory: 256mb}", "3s"},
	} {
		t.Run(tc.which+" "+tc.server, func(t *testing.T) {
			t.Parallel()
			src := `name: rdb
server: ` + tc.server + `
versions:
  - ` + versionLine(t, tc.which) + `
workload:
  ratio: GET
  value-size: 1MiB
  connections: 2
  threads: 1
  keyspace: 8
  prefill: true
  rate: 50
  duration: ` + tc.duration + `
`
			run := runAll(t, plan(t, src, nil), t.TempDir(), &Starter{Install: true}, bench.Bencher{})
			rec := run.Sorted()[0]
			var forks int64
			latest := int64(0)
			for _, s := range rec.Persistence {
				if s.Forks != nil {
					forks += *s.Forks
				}
				latest = max(latest, s.LatestForkUsec)
			}
			if forks < 1 || rec.Forks == nil || *rec.Forks != forks || rec.BGSaves < 1 || latest <= 0 {
				got := "nil"
				if rec.Forks != nil {
					got = strconv.FormatInt(*rec.Forks, 10)
				}
				t.Fatalf("%s: %d forks in the window's seconds, forks %s, %d BGSAVEs asked, latest fork %d µs; want at least one fork in the window, counted: %+v",
					rec.CellID, forks, got, rec.BGSaves, latest, rec.Persistence)
			}
			if rec.PersistenceNote != "" {
				t.Errorf("%s: a note %q on a cell that forked", rec.CellID, rec.PersistenceNote)
			}
			t.Logf("%s: %d forks, %d BGSAVEs, latest fork %d µs", rec.CellID, forks, rec.BGSaves, latest)
		})
	}
}

// A real prefill of 32 keys of 1 MiB at 2 and at 8 connections (issue
// 25): what a key costs is measured with the bench's connections closed,
// so their buffers are not counted, and it agrees with MEMORY USAGE of a
// sample of the keys within 3 %, whatever the connection count (before
// the fix 8 connections gave a quarter more than 2). Each key costs at
// least its value; on valkey 9.1 (jemalloc 5.3) less than 10 % more.
// Redis 7.0 puts a value of 1 MiB and a few bytes in jemalloc's next size
// class up, 1.25 MiB: a quarter more, which the record shows as it is.
func TestRealMemoryPerKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		which       string
		connections int
		maxOverhead float64
	}{{"valkey@9.1", 2, 0.10}, {"valkey@9.1", 8, 0.10}, {"redis", 2, 0.30}, {"redis", 8, 0.30}} {
		t.Run(fmt.Sprintf("%s/c%d", tc.which, tc.connections), func(t *testing.T) {
			t.Parallel()
			src := `name: mem
server: {maxmemory: 512mb}
versions:
  - ` + versionLine(t, tc.which) + `
workload:
  ratio: GET
  value-size: 1MiB
  connections: ` + strconv.Itoa(tc.connections) + `
  threads: 1
  keyspace: 32
  prefill: true
  rate: 50
  duration: ` + cellWindow + `
`
			run := runAll(t, plan(t, src, nil), t.TempDir(), &Starter{Install: true}, bench.Bencher{})
			rec := run.Sorted()[0]
			m := rec.Memory
			if m == nil || m.BeforePrefill == nil || m.AfterPrefill == nil || m.AfterCell == nil {
				t.Fatalf("%s: memory %+v", rec.CellID, m)
			}
			if m.AfterCell.Keys-m.BeforePrefill.Keys != 32 || m.NotMeasurable != "" {
				t.Errorf("%s: %d keys added, not measurable %q", rec.CellID, m.AfterCell.Keys-m.BeforePrefill.Keys, m.NotMeasurable)
			}
			if m.BytesPerKey < 1<<20 || m.Overhead < 0 || m.Overhead >= tc.maxOverhead {
				t.Errorf("%s: %.0f bytes per key of 1 MiB (overhead %.1f %%), want at least the value and under %.0f %% more",
					rec.CellID, m.BytesPerKey, m.Overhead*100, tc.maxOverhead*100)
			}
			u := m.MemoryUsage
			if u == nil || u.Keys < 8 || u.MeanBytes < 1<<20 {
				t.Fatalf("%s: MEMORY USAGE sample %+v, want at least 8 keys of at least the value", rec.CellID, u)
			}
			if r := m.BytesPerKey / u.MeanBytes; r < 0.97 || r > 1.03 {
				t.Errorf("%s: %.0f bytes per key against MEMORY USAGE's %.0f: %.1f %% apart, want within 3 %%",
					rec.CellID, m.BytesPerKey, u.MeanBytes, (r-1)*100)
			}
			if m.AfterPrefill.UsedMemoryRSS <= 0 || m.AfterPrefill.FragRatio <= 0 || !strings.HasPrefix(m.AfterPrefill.Allocator, "jemalloc") ||
				m.AfterPrefill.AllocatorStats["allocator_allocated"] <= 0 {
				t.Errorf("%s: after the prefill %+v", rec.CellID, m.AfterPrefill)
			}
			t.Logf("%s: %.0f bytes per key of 1 MiB, MEMORY USAGE %.0f (%d keys), overhead %.1f %%",
				rec.CellID, m.BytesPerKey, u.MeanBytes, u.Keys, m.Overhead*100)
		})
	}
}

var _ sweeps.InfoSampler = (*running)(nil)

// A version with server.tls starts TLS-only, and what the runner asks of
// it between and during cells (FLUSHALL, INFO memory and forks) goes over
// TLS with the run's CA.
func TestStarterTLSVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pv := sweeps.PlanVersion{Spec: sweeps.VersionSpec{Binary: redisBinary(t), Label: "tls", Server: sweeps.ServerSettings{TLS: true}}, Segment: "tls"}
	srv, err := (&Starter{}).Start(ctx, pv, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(ctx)
	if info, _ := srv.Info(ctx); info["config:port"] != "0" || info["config:tls-port"] == "" || info["config:tls-port"] == "0" {
		t.Errorf("not TLS-only: port %q, tls-port %q", info["config:port"], info["config:tls-port"])
	}
	if err := srv.FlushAll(ctx); err != nil {
		t.Errorf("FLUSHALL over TLS: %v", err)
	}
	s, err := srv.(sweeps.InfoSampler).SampleInfo(ctx, "memory", "keyspace")
	if err != nil || s.Fields["used_memory"] == "" {
		t.Errorf("INFO over TLS: %v, %v", s.Fields, err)
	}
}
