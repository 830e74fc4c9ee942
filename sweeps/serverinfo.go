package sweeps

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/linerate/linerate/lab"
)

// InfoSampler is a RunningServer whose INFO the runner reads while a cell
// runs, outside the measured load: its memory around the prefill and
// after the cell, and its fork activity every half second. A server on
// this machine (or in a namespace of it) answers on its own control
// connection; one on a remote host through its agent there.
type InfoSampler interface {
	// SampleInfo reads the INFO sections named (one INFO call each: the
	// multi-section form is Redis 7+ only) and says when the server
	// answered, on the client host's clock.
	SampleInfo(ctx context.Context, sections ...string) (InfoSample, error)
}

// InfoSample is what one SampleInfo read.
type InfoSample struct {
	At     time.Time         `json:"at"`
	Fields map[string]string `json:"fields"`
}

// MemorySample is INFO memory (and the key count of INFO keyspace) at one
// point of a cell.
type MemorySample struct {
	UsedMemory    int64   `json:"used_memory"`
	UsedMemoryRSS int64   `json:"used_memory_rss"`
	FragRatio     float64 `json:"mem_fragmentation_ratio"`
	Keys          int64   `json:"keys"` // every database's keys (INFO keyspace)
	Allocator     string  `json:"mem_allocator,omitempty"`
	// AllocatorStats are INFO memory's allocator_* figures (jemalloc's
	// allocated, active, resident bytes and their ratios), as numbers;
	// absent for libc malloc.
	AllocatorStats map[string]float64 `json:"allocator,omitempty"`
}

// MemoryRecord is a cell's memory: before the bench (after FLUSHALL),
// after the prefill (as the warmup begins, when the bencher marks it and
// the cell prefilled; the bench's connections are open then, so their
// buffers are in it) and after the cell (settled: the bench's
// connections closed and nothing left to free), and what each key cost.
type MemoryRecord struct {
	BeforePrefill *MemorySample `json:"before_prefill,omitempty"`
	AfterPrefill  *MemorySample `json:"after_prefill,omitempty"`
	AfterCell     *MemorySample `json:"after_cell,omitempty"`
	// BytesPerKey is Δused_memory / Δkeys from before the prefill to after
	// the cell, both settled (BytesPerKeyFrom "cell"; records written
	// before the bench's buffers were kept out of it may say "prefill");
	// absent when not measurable, and then NotMeasurable says why.
	BytesPerKey     float64 `json:"bytes_per_key,omitempty"`
	BytesPerKeyFrom string  `json:"bytes_per_key_from,omitempty"`
	// Overhead is BytesPerKey over the value size, minus 1: what the
	// server spends beyond the value itself (key, object headers, the
	// allocator's size class, the dict).
	Overhead float64 `json:"overhead,omitempty"`
	// NotMeasurable is why BytesPerKey is absent: keys already there
	// before the prefill, no key added, used_memory that did not grow,
	// a server that did not settle, INFO that could not be read.
	NotMeasurable string `json:"not_measurable,omitempty"`
	// MemoryUsage is MEMORY USAGE of a sample of the keys after the cell:
	// the server's own count per key, beside BytesPerKey; absent when the
	// server could not be asked.
	MemoryUsage *KeyMemory `json:"memory_usage,omitempty"`
}

// KeyMemory is MEMORY USAGE (SAMPLES 0) of a sample of a server's keys.
type KeyMemory struct {
	Keys      int     `json:"keys"`
	MeanBytes float64 `json:"mean_bytes"`
	MinBytes  int64   `json:"min_bytes"`
	MaxBytes  int64   `json:"max_bytes"`
}

// KeySampler is an InfoSampler that can also say what a sample of the
// server's keys cost by its own count (MEMORY USAGE), outside the load.
type KeySampler interface {
	KeyMemory(ctx context.Context, keys int) (KeyMemory, error)
}

// Snapshotter is a RunningServer the runner can ask for an RDB snapshot
// now (BGSAVE), outside the load: how a cell with bgsave-every forks the
// server inside its window.
type Snapshotter interface {
	BGSave(ctx context.Context) error
}

// KeyMemoryOf sums the MEMORY USAGE figures of a sample.
func KeyMemoryOf(usage []int64) KeyMemory {
	var k KeyMemory
	var sum float64
	for i, u := range usage {
		if i == 0 || u < k.MinBytes {
			k.MinBytes = u
		}
		k.MaxBytes = max(k.MaxBytes, u)
		sum += float64(u)
	}
	k.Keys = len(usage)
	if k.Keys > 0 {
		k.MeanBytes = sum / float64(k.Keys)
	}
	return k
}

// keySample is how many keys MEMORY USAGE reads after a cell.
const keySample = 16

// PersistenceSecond is the server's fork and rewrite activity in one
// second of the measured window, numbered as the result's series are: a
// p99 spike in second N of the bench lines up with a fork here. Samples
// are taken every half second; a second holds what its samples saw, and
// the window's last second also the read taken as the bench returned.
type PersistenceSecond struct {
	Second int `json:"second"`
	// Samples is how many INFO reads fell in the second.
	Samples              int  `json:"samples"`
	RDBBgsaveInProgress  bool `json:"rdb_bgsave_in_progress"`
	AOFRewriteInProgress bool `json:"aof_rewrite_in_progress"`
	// LatestForkUsec is the last fork's duration as the second's last
	// sample reports it (INFO stats latest_fork_usec).
	LatestForkUsec int64 `json:"latest_fork_usec"`
	// Forks is how many forks began since the previous sample (INFO stats
	// total_forks), absent where the server does not count them.
	Forks      *int64 `json:"forks,omitempty"`
	TotalForks *int64 `json:"total_forks,omitempty"`
	// RDBSaves and AOFRewrites count completed snapshots and rewrites
	// (INFO persistence, Redis 7 and Valkey); absent where not reported.
	RDBSaves    *int64 `json:"rdb_saves,omitempty"`
	AOFRewrites *int64 `json:"aof_rewrites,omitempty"`
	// AOFDelayedFsync counts fsyncs the AOF had to wait for (everysec).
	AOFDelayedFsync *int64 `json:"aof_delayed_fsync,omitempty"`
}

// INFO sections each kind of sample reads.
var (
	memorySections      = []string{"memory", "keyspace"}
	persistenceSections = []string{"persistence", "stats"}
)

// memorySample reads a MemorySample from INFO memory and keyspace fields.
func memorySample(f map[string]string) *MemorySample {
	m := &MemorySample{
		UsedMemory:    atoi(f["used_memory"]),
		UsedMemoryRSS: atoi(f["used_memory_rss"]),
		Allocator:     f["mem_allocator"],
	}
	m.FragRatio, _ = strconv.ParseFloat(f["mem_fragmentation_ratio"], 64)
	for k, v := range f {
		switch {
		case strings.HasPrefix(k, "allocator_"):
			if x, err := strconv.ParseFloat(v, 64); err == nil {
				if m.AllocatorStats == nil {
					m.AllocatorStats = map[string]float64{}
				}
				m.AllocatorStats[k] = x
			}
		case strings.HasPrefix(k, "db") && strings.HasPrefix(v, "keys="):
			// db0:keys=500,expires=0,avg_ttl=0
			keys, _, _ := strings.Cut(strings.TrimPrefix(v, "keys="), ",")
			m.Keys += atoi(keys)
		}
	}
	return m
}

func atoi(s string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	return n
}

// memoryRecord puts a cell's samples together and works out what a key
// cost: Δused_memory / Δkeys from before the prefill to after the cell,
// both taken settled (unsettled says why one was not). Never negative:
// keys already there before, no key added or used_memory that did not
// grow leave it absent with the reason.
func memoryRecord(before, afterPrefill, afterCell *MemorySample, valueSize int64, unsettled string) *MemoryRecord {
	m := &MemoryRecord{BeforePrefill: before, AfterPrefill: afterPrefill, AfterCell: afterCell}
	switch {
	case unsettled != "":
		m.NotMeasurable = unsettled
	case before == nil || afterCell == nil:
		m.NotMeasurable = "INFO memory could not be read before the prefill and after the cell"
	case before.Keys > 0:
		m.NotMeasurable = fmt.Sprintf("%d keys were there before the prefill (FLUSHALL left them): the memory before is not an empty server's", before.Keys)
	case afterCell.Keys <= before.Keys:
		m.NotMeasurable = "the cell added no key"
	case afterCell.UsedMemory <= before.UsedMemory:
		m.NotMeasurable = fmt.Sprintf("used_memory did not grow (%+d bytes for %d keys added)", afterCell.UsedMemory-before.UsedMemory, afterCell.Keys-before.Keys)
	default:
		m.BytesPerKey = float64(afterCell.UsedMemory-before.UsedMemory) / float64(afterCell.Keys-before.Keys)
		m.BytesPerKeyFrom = "cell"
		if valueSize > 0 {
			m.Overhead = m.BytesPerKey/float64(valueSize) - 1
		}
	}
	return m
}

// persistenceSeries puts fork samples into the seconds of the window that
// opened at start: second i holds the samples taken in [start+i,
// start+i+1). Forks are counted against the sample before each, which may
// be from before the window. A second no sample fell in is left out.
//
// closing, when not nil, is the read taken as the bench returned, after
// the window closed: it goes into the window's last second, so a fork
// begun after the last read inside the window is still counted (two
// reads a second can be late or missing on a starved client host; the
// total_forks at the window's two edges cannot). Its forks may include
// one the server's own schedule began in the moment between the window's
// end and that read: the runner asks no BGSAVE so late (bgsaveDue).
func persistenceSeries(samples []InfoSample, closing *InfoSample, start time.Time, seconds int) []PersistenceSecond {
	var out []PersistenceSecond
	var prevForks *int64
	if closing != nil && seconds > 0 {
		samples = append(samples[:len(samples):len(samples)], *closing)
	}
	for k, smp := range samples {
		forks := optInt(smp.Fields, "total_forks")
		d := smp.At.Sub(start)
		i := int(d / time.Second)
		if closing != nil && k == len(samples)-1 && d >= 0 {
			i = min(i, seconds-1)
		}
		if d < 0 || i >= seconds {
			if d < 0 {
				prevForks = forks
			}
			continue
		}
		if len(out) == 0 || out[len(out)-1].Second != i {
			out = append(out, PersistenceSecond{Second: i})
		}
		sec := &out[len(out)-1]
		sec.Samples++
		sec.RDBBgsaveInProgress = sec.RDBBgsaveInProgress || smp.Fields["rdb_bgsave_in_progress"] == "1"
		sec.AOFRewriteInProgress = sec.AOFRewriteInProgress || smp.Fields["aof_rewrite_in_progress"] == "1"
		sec.LatestForkUsec = atoi(smp.Fields["latest_fork_usec"])
		sec.TotalForks = forks
		sec.RDBSaves = optInt(smp.Fields, "rdb_saves")
		sec.AOFRewrites = optInt(smp.Fields, "aof_rewrites")
		sec.AOFDelayedFsync = optInt(smp.Fields, "aof_delayed_fsync")
		if forks != nil {
			n := int64(0)
			if sec.Forks != nil {
				n = *sec.Forks
			}
			if prevForks != nil {
				n += *forks - *prevForks
			}
			sec.Forks = &n
		}
		prevForks = forks
	}
	return out
}

// optInt is a field as a number, nil when the server does not report it.
func optInt(f map[string]string, key string) *int64 {
	v, ok := f[key]
	if !ok {
		return nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return nil
	}
	return &n
}

// forkEvery is how often a persisting server's fork activity is read.
const forkEvery = 500 * time.Millisecond

// infoTimeout bounds one INFO read: a server busy forking answers late,
// and a cell must not wait on it.
const infoTimeout = 5 * time.Second

// settleEvery and settleTimeout pace and bound the wait for a server to
// settle before its memory is read for the per-key figure: the bench's
// connections gone (connected_clients down to the runner's own) and
// nothing left for the lazy free (lazyfree_pending_objects 0, where the
// server reports it), so neither their buffers nor a previous cell's
// keys are counted.
const (
	settleEvery   = 50 * time.Millisecond
	settleTimeout = 10 * time.Second
)

// settleSections are the INFO sections a settled read takes.
var settleSections = []string{"memory", "keyspace", "clients"}

// unsettled says why a read of settleSections is not yet of a settled
// server ("" when it is).
func unsettled(f map[string]string) string {
	var why []string
	if n := atoi(f["connected_clients"]); n > 1 {
		why = append(why, fmt.Sprintf("%d client connections besides the runner's", n-1))
	}
	if n := atoi(f["lazyfree_pending_objects"]); n > 0 {
		why = append(why, fmt.Sprintf("%d objects waiting to be freed", n))
	}
	return strings.Join(why, " and ")
}

// infoWatch reads one cell's server INFO for the runner: memory before
// the bench, as the prefill ends and after the cell, and, when the
// version persists, fork activity every forkEvery while the bench runs.
// A read that fails leaves its sample out; the cell goes on.
type infoWatch struct {
	srv     InfoSampler
	ctx     context.Context
	mu      sync.Mutex
	samples []InfoSample
	// closing is the read taken as the bench returned (closeWindow).
	closing *InfoSample
	before  *MemorySample
	prefill *MemorySample
	// unsettled is why a read for the per-key figure was not of a
	// settled server; "" when both were.
	unsettled string
	stop      chan struct{}
	done      chan struct{}
}

// watchInfo starts watching srv for a cell (nil when srv cannot read INFO):
// the memory before the bench now, and forks from now on when forks is
// set. ctx is the runner's, not the cell's: the last reads come after the
// bench ended the cell's.
func watchInfo(ctx context.Context, srv RunningServer, forks bool) *infoWatch {
	is, ok := srv.(InfoSampler)
	if !ok {
		return nil
	}
	iw := &infoWatch{srv: is, ctx: ctx, stop: make(chan struct{}), done: make(chan struct{})}
	iw.before, iw.unsettled = iw.settled()
	if !forks {
		close(iw.done)
		return iw
	}
	go func() {
		defer close(iw.done)
		t := time.NewTicker(forkEvery)
		defer t.Stop()
		for {
			if s, err := iw.read(persistenceSections); err == nil {
				iw.mu.Lock()
				iw.samples = append(iw.samples, s)
				iw.mu.Unlock()
			}
			select {
			case <-t.C:
			case <-iw.stop:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return iw
}

func (iw *infoWatch) read(sections []string) (InfoSample, error) {
	ctx, cancel := context.WithTimeout(iw.ctx, infoTimeout)
	defer cancel()
	return iw.srv.SampleInfo(ctx, sections...)
}

func (iw *infoWatch) memory() *MemorySample {
	s, err := iw.read(memorySections)
	if err != nil {
		return nil
	}
	return memorySample(s.Fields)
}

// settled reads the memory once the server has settled (settleTimeout at
// most); when it did not, the memory as last read and why.
func (iw *infoWatch) settled() (*MemorySample, string) {
	deadline := time.Now().Add(settleTimeout)
	for {
		s, err := iw.read(settleSections)
		if err != nil {
			return nil, ""
		}
		why := unsettled(s.Fields)
		if why == "" {
			return memorySample(s.Fields), ""
		}
		if time.Now().After(deadline) {
			return memorySample(s.Fields), fmt.Sprintf("the server had not settled %s after the bench: %s", settleTimeout, why)
		}
		select {
		case <-time.After(settleEvery):
		case <-iw.ctx.Done():
			return nil, ""
		}
	}
}

// keyMemory asks a KeySampler what a sample of the keys cost; nil when
// the server cannot say or has no key.
func (iw *infoWatch) keyMemory(after *MemorySample) *KeyMemory {
	ks, ok := iw.srv.(KeySampler)
	if !ok || after == nil || after.Keys == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(iw.ctx, infoTimeout)
	defer cancel()
	k, err := ks.KeyMemory(ctx, keySample)
	if err != nil || k.Keys == 0 {
		return nil
	}
	return &k
}

// prefilled reads the memory as the prefill ends (the bencher's warmup
// mark, before any warmup request is sent).
func (iw *infoWatch) prefilled() {
	m := iw.memory()
	iw.mu.Lock()
	iw.prefill = m
	iw.mu.Unlock()
}

// closeWindow stops the fork reads and, when there were any, takes the
// closing read: the fork counters as the window closed, whatever reads
// inside it were late or missing. Called as the bench returns, after the
// BGSAVEs stopped; finish calls it when the runner did not.
func (iw *infoWatch) closeWindow() {
	select {
	case <-iw.stop:
		return
	default:
	}
	close(iw.stop)
	<-iw.done
	iw.mu.Lock()
	watched := len(iw.samples) > 0
	iw.mu.Unlock()
	if !watched {
		return
	}
	if s, err := iw.read(persistenceSections); err == nil {
		iw.mu.Lock()
		iw.closing = &s
		iw.mu.Unlock()
	}
}

// finish stops the fork reads, reads the memory after the cell and puts
// both into rec, the forks cut to res's measured window.
func (iw *infoWatch) finish(rec *CellRecord, res *lab.Result, w lab.Workload) {
	iw.closeWindow()
	after, why := iw.settled()
	if why == "" {
		why = iw.unsettled
	}
	keys := iw.keyMemory(after)
	iw.mu.Lock()
	defer iw.mu.Unlock()
	// With a size mix the overhead is over the mix's mean value size.
	rec.Memory = memoryRecord(iw.before, iw.prefill, after, int64(math.Round(w.ValueSz.Mean())), why)
	rec.Memory.MemoryUsage = keys
	if len(iw.samples) == 0 || res == nil || res.Window.Measured <= 0 {
		return
	}
	start := res.Ended.Add(-res.Window.Measured.D())
	if res.Window.Start != nil {
		start = *res.Window.Start
	}
	secs := int((res.Window.Measured.D() + time.Second - 1) / time.Second)
	rec.Persistence = persistenceSeries(iw.samples, iw.closing, start, secs)
}

// persists says whether a version keeps anything on disk or is asked to
// snapshot, so its forks are worth reading.
func persists(s ServerSettings) bool {
	return (s.Persistence != "" && s.Persistence != "none") || s.BGSaveEvery > 0
}

// bgsaveEvery is how often the runner asks a cell's server for BGSAVE:
// server.bgsave-every, else half the window for persistence rdb (one
// snapshot, in the middle of the window, whose own save schedule would
// not fire within a short cell), else never.
func bgsaveEvery(s ServerSettings, w lab.Workload) time.Duration {
	switch {
	case s.BGSaveEvery > 0:
		return s.BGSaveEvery.D()
	case s.Persistence == "rdb" && w.Duration > 0:
		return max(w.Duration.D()/2, MinBGSaveEvery)
	}
	return 0
}

// bgsaver asks a server for BGSAVE every `every` while a cell runs,
// counting from the bench's start, then again from the measured
// window's start when the bencher marks it (anchor).
type bgsaver struct {
	srv   Snapshotter
	every time.Duration
	// anchor carries the measured window's length as it opens.
	anchor chan time.Duration
	stop   chan struct{}
	done   chan struct{}
	asked  int
	errs   []string
}

// startBGSaves starts asking srv for BGSAVE every `every`; nil when every
// is 0. A server that cannot snapshot gets a bgsaver that only says so.
func startBGSaves(ctx context.Context, srv RunningServer, every time.Duration) *bgsaver {
	if every <= 0 {
		return nil
	}
	b := &bgsaver{every: every, anchor: make(chan time.Duration, 1), stop: make(chan struct{}), done: make(chan struct{})}
	sn, ok := srv.(Snapshotter)
	if !ok {
		b.errs = append(b.errs, "the server cannot be asked for BGSAVE")
		close(b.done)
		return b
	}
	b.srv = sn
	go b.run(ctx)
	return b
}

func (b *bgsaver) run(ctx context.Context) {
	defer close(b.done)
	t := time.NewTimer(b.every)
	defer t.Stop()
	var windowEnd time.Time
	for {
		select {
		case <-t.C:
			if !bgsaveDue(time.Now(), windowEnd, b.every) {
				continue
			}
			bctx, cancel := context.WithTimeout(ctx, infoTimeout)
			err := b.srv.BGSave(bctx)
			cancel()
			b.asked++
			if err != nil && len(b.errs) < 3 {
				b.errs = append(b.errs, err.Error())
			}
			t.Reset(b.every)
		case window := <-b.anchor:
			if window > 0 {
				windowEnd = time.Now().Add(window)
			}
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
			t.Reset(b.every)
		case <-b.stop:
			return
		case <-ctx.Done():
			return
		}
	}
}

// windowOpened restarts the schedule at the measured window's start;
// window is its length (0: not known, no end to the schedule).
func (b *bgsaver) windowOpened(window time.Duration) {
	if b == nil {
		return
	}
	select {
	case b.anchor <- window:
	default:
	}
}

// bgsaveDue says whether a BGSAVE the schedule reached at now is asked
// for: not in the last half period of the window (windowEnd, zero while
// it is not open), nor after it. A fork there would fall mostly after the
// window, and one begun after it must not be counted in it by the read
// that closes it (closeWindow): with persistence rdb the period is half
// the window, so its second BGSAVE would come exactly as the window ends.
// Once the schedule is past that point it asks for nothing more.
func bgsaveDue(now, windowEnd time.Time, every time.Duration) bool {
	return windowEnd.IsZero() || now.Before(windowEnd.Add(-every/2))
}

// finish stops asking and returns how many BGSAVEs were asked for and
// what went wrong.
func (b *bgsaver) finish() (int, []string) {
	if b == nil {
		return 0, nil
	}
	if b.srv != nil {
		close(b.stop)
	}
	<-b.done
	return b.asked, b.errs
}

// ForksIn is the forks begun in a window's seconds; nil when no second
// counted them (a server that does not report total_forks, or no read).
func ForksIn(ps []PersistenceSecond) *int64 {
	var forks *int64
	for _, s := range ps {
		if s.Forks != nil {
			n := *s.Forks
			if forks != nil {
				n += *forks
			}
			forks = &n
		}
	}
	return forks
}

// forkSummary is a cell's forks in its window (nil when no second counted
// them) and, when a cell that should fork did not, why: a cell that
// persists and found no fork says so, with the BGSAVEs asked for and
// their errors.
func forkSummary(ps []PersistenceSecond, asked int, errs []string) (*int64, string) {
	forks := ForksIn(ps)
	if forks == nil || *forks > 0 {
		if len(errs) > 0 {
			return forks, "BGSAVE: " + strings.Join(errs, "; ")
		}
		return forks, ""
	}
	note := "no fork began in the measured window, so it measured no persistence: the server's own save schedule did not fire"
	switch {
	case asked == 0 && len(errs) == 0:
		note += "; set server.bgsave-every shorter than the window to force one"
	case asked == 0:
		note += "; " + strings.Join(errs, "; ")
	default:
		note += fmt.Sprintf(" and none of the %d BGSAVEs asked for forked inside it", asked)
		if len(errs) > 0 {
			note += " (" + strings.Join(errs, "; ") + ")"
		}
	}
	return forks, note
}
