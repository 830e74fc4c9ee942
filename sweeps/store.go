package sweeps

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/atomicfile"
	"github.com/linerate/linerate/lab/hdrfile"
	"github.com/linerate/linerate/sweeps/hostmetrics"
)

// Run directory layout. One directory per campaign:
//
//	campaign.yaml   the campaign file as given
//	plan.json       the resolved spec: campaign, versions, cells in order
//	env.json        the environment record
//	cells/*.json    one CellRecord per cell (ID with / as _)
//	soak/*.json     soak reruns of single cells
//	hgrm/           HdrHistogram files of cells and soaks (hdrfile.WriteFiles)
//	logs/           server and runner logs
//	lock            flock'd by the runner; holds its PID
const (
	CampaignFile = "campaign.yaml"
	PlanFile     = "plan.json"
	EnvFile      = "env.json"
	CellsDir     = "cells"
	SoakDir      = "soak"
	HgrmDir      = "hgrm"
	LogsDir      = "logs"
	LockFile     = "lock"
)

// CellSchema names the layout of CellRecord.
const CellSchema = "linerate.cell/v1"

// CellStatus is how a cell's last attempt ended.
type CellStatus string

const (
	StatusDone   CellStatus = "done"
	StatusFailed CellStatus = "failed"
)

// CellRecord is one cell's stored outcome.
type CellRecord struct {
	Schema   string       `json:"schema"`
	Campaign string       `json:"campaign"`
	CellID   string       `json:"cell_id"`
	Key      string       `json:"key"` // the ID without version and repetition
	Hash     string       `json:"hash"`
	Index    int          `json:"index"`
	Rep      int          `json:"rep"`
	Version  VersionID    `json:"version"`
	Workload lab.Workload `json:"workload"` // as planned; Result.Workload is as run
	Status   CellStatus   `json:"status"`
	Reason   string       `json:"reason,omitempty"` // why it failed
	Attempts int          `json:"attempts"`
	Started  time.Time    `json:"started"`
	Ended    time.Time    `json:"ended"`
	Result   *lab.Result  `json:"result,omitempty"`
	// Host is the server host's metrics over the measured window.
	Host  *hostmetrics.Window `json:"host,omitempty"`
	Limit *hostmetrics.Limit  `json:"limit,omitempty"`
	// Tuning is the check of the hosts against the tuning profile made
	// just before the cell; absent when the campaign names no profile.
	Tuning *TuningVerify `json:"tuning,omitempty"`
	// Memory is the server's INFO memory around the prefill and after the
	// cell, and the bytes a key took; absent when the server was not asked
	// (a starter that cannot read INFO) or did not answer.
	Memory *MemoryRecord `json:"memory,omitempty"`
	// Persistence is the server's fork and rewrite activity per second of
	// the measured window; absent when the version's persistence is none.
	Persistence []PersistenceSecond `json:"persistence,omitempty"`
	// Forks is how many forks began in the measured window (the sum of
	// Persistence's seconds), a measured 0 included; absent when the
	// server's forks were not read or not counted.
	Forks *int64 `json:"forks,omitempty"`
	// BGSaves is how many snapshots the runner asked for (BGSAVE) while
	// the bench ran: server.bgsave-every, or persistence rdb.
	BGSaves int `json:"bgsaves,omitempty"`
	// PersistenceNote says why a cell that should have forked did not
	// (no fork in the window, a BGSAVE refused); empty otherwise.
	PersistenceNote string `json:"persistence_note,omitempty"`
	// Clients holds each client host's own record when the load came
	// from several (clients: N); Result is their merge.
	Clients []ClientRecord `json:"clients,omitempty"`
	// NIC is each host's data interface over the measured window: the
	// rise of its driver's trouble counters (clients.go).
	NIC []NICDelta `json:"nic,omitempty"`
	// ClientLimited repeats Limit's flag at the top so no summary misses it.
	ClientLimited bool      `json:"client_limited"`
	History       []Attempt `json:"history,omitempty"` // earlier failed attempts
}

// TuningVerify is tuning.Verify's report, kept opaque here.
type TuningVerify struct {
	Drifts int             `json:"drifts"`
	Report json.RawMessage `json:"report"`
}

// Attempt is an earlier failed attempt kept for the record.
type Attempt struct {
	Ended  time.Time `json:"ended"`
	Reason string    `json:"reason"`
}

// VersionID is which server measured: as asked, and as it said it was.
type VersionID struct {
	Label    string            `json:"label"`
	Segment  string            `json:"segment"` // the cell ID's version part
	Selector string            `json:"selector"`
	Runtime  string            `json:"runtime,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	Resolved *Resolved         `json:"resolved,omitempty"`
}

// Environment is the run directory's record of where it ran.
type Environment struct {
	Schema        string          `json:"schema"`
	Campaign      string          `json:"campaign"`
	SpecHash      string          `json:"spec_hash"`
	Created       time.Time       `json:"created"`
	Updated       time.Time       `json:"updated"`
	Linerate      Build           `json:"linerate"`
	Hosts         []HostFacts     `json:"hosts"`
	TuningProfile string          `json:"tuning_profile,omitempty"` // the campaign's profile name
	Tuning        json.RawMessage `json:"tuning,omitempty"`         // the tuning snapshot, opaque here
	Servers       []ServerFacts   `json:"servers"`
	// Link is the link as calibrated before the first cell (link.go);
	// absent when not measured.
	Link *Link `json:"link,omitempty"`
	// StatedLink is the network performance the provider states for the
	// hosts, as the preflight read it (aws: the instance type's
	// NetworkPerformance, "200 Gigabit"); absent where none is stated.
	StatedLink string `json:"stated_link,omitempty"`
}

// EnvSchema names the layout of Environment.
const EnvSchema = "linerate.env/v1"

// ServerFacts is one started server version and what its INFO said.
type ServerFacts struct {
	Segment  string            `json:"segment"`
	Selector string            `json:"selector"`
	Resolved Resolved          `json:"resolved"`
	Info     map[string]string `json:"info,omitempty"`
	Started  time.Time         `json:"started"`
	// TLS: the server served TLS only and answered over it (its readiness
	// PING and INFO went over TLS); the cells' benches spoke TLS to it.
	TLS bool `json:"tls,omitempty"`
}

// LockedError says another runner holds the run directory.
type LockedError struct {
	Dir string
	PID int // 0 when the lock file did not say
}

func (e *LockedError) Error() string {
	who := "another runner"
	if e.PID > 0 {
		who = "linerate pid " + strconv.Itoa(e.PID)
	}
	return fmt.Sprintf("run directory %s is in use by %s (lock %s); wait for it, or stop it first", e.Dir, who, filepath.Join(e.Dir, LockFile))
}

// Store is a run directory opened for writing: it holds the lock until Close.
type Store struct {
	Dir  string
	lock *os.File
}

// OpenStore creates (or reopens, to resume) a run directory and takes its
// lock. A second runner on the same directory gets a *LockedError.
func OpenStore(dir string) (*Store, error) {
	for _, d := range []string{dir, filepath.Join(dir, CellsDir), filepath.Join(dir, LogsDir), filepath.Join(dir, SoakDir), filepath.Join(dir, HgrmDir)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("create run directory: %w", err)
		}
	}
	lp := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(lp, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", lp, err)
	}
	// flock, not a PID file alone: the kernel drops it when the holder dies,
	// even by SIGKILL, so a crashed runner never leaves the directory stuck.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(lp)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			return nil, &LockedError{Dir: dir, PID: pid}
		}
		return nil, fmt.Errorf("lock %s: %w", lp, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		_ = f.Sync()
	}
	s := &Store{Dir: dir, lock: f}
	s.removeTemps()
	return s, nil
}

// Close releases the lock.
func (s *Store) Close() error {
	if s.lock == nil {
		return nil
	}
	_ = s.lock.Truncate(0)
	err := s.lock.Close() // closing the last descriptor releases the flock
	s.lock = nil
	return err
}

// removeTemps deletes temp files a killed writer left; only the lock holder
// may, since a live writer's temp file looks the same.
func (s *Store) removeTemps() {
	for _, d := range []string{s.Dir, filepath.Join(s.Dir, CellsDir), filepath.Join(s.Dir, SoakDir), filepath.Join(s.Dir, HgrmDir)} {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if isTemp(e.Name()) {
				_ = os.Remove(filepath.Join(d, e.Name()))
			}
		}
	}
}

func isTemp(name string) bool { return atomicfile.IsTemp(name) }

// WriteFileAtomic is atomicfile.Write: a reader, or a crash at any
// instant, sees the old file or the new one, never a mix.
func WriteFileAtomic(path string, data []byte) error { return atomicfile.Write(path, data) }

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return WriteFileAtomic(path, append(b, '\n'))
}

// WriteSpec stores the campaign file as given and the resolved plan.
func (s *Store) WriteSpec(p *Plan) error {
	if err := WriteFileAtomic(filepath.Join(s.Dir, CampaignFile), p.Campaign.Source); err != nil {
		return err
	}
	return writeJSON(filepath.Join(s.Dir, PlanFile), p)
}

// WriteEnv stores the environment record, merged into the one on disk
// (e is updated to the merge): a resumed run starts only the versions it
// still has to run, and the server facts of the others, recorded in
// earlier sessions, must stay. e's hosts, tuning and build are the
// current ones; the record was created when the first session made it.
func (s *Store) WriteEnv(e *Environment) error {
	p := filepath.Join(s.Dir, EnvFile)
	if b, err := os.ReadFile(p); err == nil {
		var old Environment
		if json.Unmarshal(b, &old) == nil {
			e.mergeEarlier(&old)
		}
	}
	e.Schema = EnvSchema
	e.Updated = time.Now().UTC()
	return writeJSON(p, e)
}

// WriteCell stores one cell's record, replacing an earlier attempt, and
// its HdrHistogram files in hgrm/ (named as the record, .json replaced by
// .OP.hgrm and .OP.hlog).
func (s *Store) WriteCell(r *CellRecord) error {
	r.Schema = CellSchema
	name := CellFileName(r.CellID)
	if err := writeJSON(filepath.Join(s.Dir, CellsDir, name), r); err != nil {
		return err
	}
	_, err := hdrfile.WriteFiles(filepath.Join(s.Dir, HgrmDir), strings.TrimSuffix(name, ".json"), r.Result)
	return err
}

// WriteSoak stores a soak rerun beside the campaign; a *SoakRecord's
// HdrHistogram files go to hgrm/soak_NAME.OP.hgrm and .hlog.
func (s *Store) WriteSoak(name string, v any) error {
	if err := writeJSON(filepath.Join(s.Dir, SoakDir, name+".json"), v); err != nil {
		return err
	}
	if rec, ok := v.(*SoakRecord); ok {
		_, err := hdrfile.WriteFiles(filepath.Join(s.Dir, HgrmDir), SoakDir+"_"+name, rec.Result)
		return err
	}
	return nil
}

// LogDir is where servers and the runner write their logs.
func (s *Store) LogDir() string { return filepath.Join(s.Dir, LogsDir) }

// Run is a run directory as read: it may be half-run, and may be read while
// a runner writes it.
type Run struct {
	Dir   string
	Env   *Environment // nil when not written yet
	Cells map[string]*CellRecord
	// Problems lists files that could not be read; their cells count as
	// not run, so a resume redoes them.
	Problems []string
	// Planned maps the cell IDs of plan.json to their hashes; nil when the
	// run has no plan yet. Records outside it are left from an earlier spec.
	Planned map[string]string
}

// Current returns the records of the current plan (all when there is no
// plan), in plan order: cells of an earlier spec left in the directory are
// not mixed into summaries.
func (r *Run) Current() []*CellRecord {
	var out []*CellRecord
	for _, c := range r.Sorted() {
		if r.Planned == nil || r.Planned[c.CellID] == c.Hash {
			out = append(out, c)
		}
	}
	return out
}

// ReadRun reads a run directory without locking it. Missing parts are
// tolerated; stray temp files are ignored.
func ReadRun(dir string) (*Run, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("read run: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("read run: %s is not a directory", dir)
	}
	r := &Run{Dir: dir, Cells: map[string]*CellRecord{}}
	if b, err := os.ReadFile(filepath.Join(dir, EnvFile)); err == nil {
		var e Environment
		if err := json.Unmarshal(b, &e); err != nil {
			r.Problems = append(r.Problems, fmt.Sprintf("%s: %v", EnvFile, err))
		} else {
			r.Env = &e
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, PlanFile)); err == nil {
		var p struct {
			Cells []struct {
				ID   string `json:"id"`
				Hash string `json:"hash"`
			} `json:"cells"`
		}
		if err := json.Unmarshal(b, &p); err != nil {
			r.Problems = append(r.Problems, fmt.Sprintf("%s: %v", PlanFile, err))
		} else {
			r.Planned = map[string]string{}
			for _, c := range p.Cells {
				r.Planned[c.ID] = c.Hash
			}
		}
	}
	ents, err := os.ReadDir(filepath.Join(dir, CellsDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read run cells: %w", err)
	}
	for _, e := range ents {
		name := e.Name()
		if isTemp(name) || !strings.HasSuffix(name, ".json") || e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, CellsDir, name))
		if err != nil {
			r.Problems = append(r.Problems, fmt.Sprintf("%s/%s: %v", CellsDir, name, err))
			continue
		}
		c, err := decodeCell(b)
		if err != nil {
			r.Problems = append(r.Problems, fmt.Sprintf("%s/%s: %v", CellsDir, name, err))
			continue
		}
		r.Cells[c.CellID] = c
	}
	return r, nil
}

// decodeCell reads one stored cell record. A record is untrusted input:
// one without an ID, or with null where a figure belongs, is unreadable.
func decodeCell(b []byte) (*CellRecord, error) {
	var c CellRecord
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, err
	}
	return &c, checkStored(c.CellID, c.Result)
}

// DecodeSoak reads one stored soak record with the checks of a cell's.
func DecodeSoak(b []byte) (*SoakRecord, error) {
	var s SoakRecord
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	return &s, checkStored(s.CellID, s.Result)
}

func checkStored(cellID string, res *lab.Result) error {
	if cellID == "" {
		return errors.New("no cell_id")
	}
	if res != nil {
		if err := res.CheckNulls(); err != nil {
			return fmt.Errorf("result %w", err)
		}
	}
	return nil
}

// Sorted returns the cells in plan order.
func (r *Run) Sorted() []*CellRecord {
	out := make([]*CellRecord, 0, len(r.Cells))
	for _, c := range r.Cells {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Index != out[j].Index {
			return out[i].Index < out[j].Index
		}
		return out[i].CellID < out[j].CellID
	})
	return out
}
