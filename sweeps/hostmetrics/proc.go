// Package hostmetrics samples what a host spent during a measured window
// (the server's per-thread CPU by thread name, minor page faults, per-core
// CPU, NIC byte counters) and labels a cell with what most likely ran out.
// Every read goes through FS, rooted at a mount point, so tests run on
// fixture trees and production on the real /proc.
package hostmetrics

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// UserHZ is the kernel's clock tick for /proc CPU times. It is 100 on every
// Linux architecture linerate runs on (arm64, amd64); reading it would need
// cgo's sysconf.
const UserHZ = 100

// FS reads /proc under Root ("/" on a real host).
type FS struct{ Root string }

func (f FS) path(p ...string) string {
	root := f.Root
	if root == "" {
		root = "/"
	}
	return filepath.Join(append([]string{root}, p...)...)
}

// ThreadSample is one thread's CPU so far.
type ThreadSample struct {
	TID    int    `json:"tid"`
	Name   string `json:"name"`
	UTicks uint64 `json:"utime_ticks"`
	STicks uint64 `json:"stime_ticks"`
}

// ProcSample is one process at one instant.
type ProcSample struct {
	PID     int            `json:"pid"`
	MinFlt  uint64         `json:"minflt"`
	Threads []ThreadSample `json:"threads"`
}

// CoreSample is one CPU's jiffies so far.
type CoreSample struct {
	CPU   int    `json:"cpu"`
	Busy  uint64 `json:"busy"`
	Total uint64 `json:"total"`
}

// NICSample is one interface's byte counters so far.
type NICSample struct {
	Name string `json:"name"`
	Rx   uint64 `json:"rx_bytes"`
	Tx   uint64 `json:"tx_bytes"`
}

// Snapshot is everything sampled at one instant. Proc is nil when no PID was
// given (a server in a container on another host reports through its agent).
type Snapshot struct {
	At    time.Time    `json:"at"`
	Proc  *ProcSample  `json:"proc,omitempty"`
	Cores []CoreSample `json:"cores"`
	NICs  []NICSample  `json:"nics"`
}

// Snapshot samples pid (0: no process), all cores and all NICs.
func (f FS) Snapshot(pid int) (*Snapshot, error) {
	s := &Snapshot{At: time.Now()}
	var err error
	if pid > 0 {
		if s.Proc, err = f.Process(pid); err != nil {
			return nil, err
		}
	}
	if s.Cores, err = f.Cores(); err != nil {
		return nil, err
	}
	// The server's own view of the network: in another namespace (the
	// netns provider) its veth is there and not in ours.
	err = fs.ErrNotExist
	if pid > 0 {
		s.NICs, err = f.nicsAt(f.path("proc", strconv.Itoa(pid), "net", "dev"))
	}
	if errors.Is(err, fs.ErrNotExist) {
		s.NICs, err = f.NICs()
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Process reads /proc/<pid>/stat and every /proc/<pid>/task/*/{comm,stat}.
// Threads that end between listing and reading are skipped.
func (f FS) Process(pid int) (*ProcSample, error) {
	b, err := os.ReadFile(f.path("proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil, fmt.Errorf("read process %d: %w", pid, err)
	}
	st, err := ParseStat(b)
	if err != nil {
		return nil, fmt.Errorf("read process %d: %w", pid, err)
	}
	p := &ProcSample{PID: pid, MinFlt: st.MinFlt}
	taskDir := f.path("proc", strconv.Itoa(pid), "task")
	ents, err := os.ReadDir(taskDir)
	if err != nil {
		return nil, fmt.Errorf("read threads of %d: %w", pid, err)
	}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		sb, err := os.ReadFile(filepath.Join(taskDir, e.Name(), "stat"))
		if err != nil {
			continue // thread exited
		}
		ts, err := ParseStat(sb)
		if err != nil {
			return nil, fmt.Errorf("read thread %d of %d: %w", tid, pid, err)
		}
		name := ts.Comm
		// comm is the authoritative name file; stat's copy is the same text
		// but parenthesised, kept as a fallback.
		if cb, err := os.ReadFile(filepath.Join(taskDir, e.Name(), "comm")); err == nil {
			name = strings.TrimRight(string(cb), "\n")
		}
		p.Threads = append(p.Threads, ThreadSample{TID: tid, Name: name, UTicks: ts.UTime, STicks: ts.STime})
	}
	sort.Slice(p.Threads, func(i, j int) bool { return p.Threads[i].TID < p.Threads[j].TID })
	return p, nil
}

// Stat is the part of /proc/<pid>/stat linerate uses.
type Stat struct {
	Comm   string
	MinFlt uint64
	UTime  uint64
	STime  uint64
	// StartTicks is when the process started, in clock ticks after boot
	// (0 when the line stops short of it).
	StartTicks uint64
}

// ParseStat reads a /proc/<pid>/stat or task stat line. The name may hold
// spaces and parentheses, so fields are counted from the last ')'.
func ParseStat(b []byte) (Stat, error) {
	s := string(bytes.TrimSpace(b))
	open := strings.IndexByte(s, '(')
	closeAt := strings.LastIndexByte(s, ')')
	if open < 0 || closeAt < open {
		return Stat{}, fmt.Errorf("stat %q: no (comm)", s)
	}
	f := strings.Fields(s[closeAt+1:])
	// f[0] is field 3 (state): minflt is field 10, utime 14, stime 15.
	if len(f) < 13 {
		return Stat{}, fmt.Errorf("stat: %d fields after comm, want at least 13", len(f))
	}
	num := func(i int) (uint64, error) { return strconv.ParseUint(f[i], 10, 64) }
	st := Stat{Comm: s[open+1 : closeAt]}
	var err error
	if st.MinFlt, err = num(7); err != nil {
		return Stat{}, fmt.Errorf("stat minflt: %w", err)
	}
	if st.UTime, err = num(11); err != nil {
		return Stat{}, fmt.Errorf("stat utime: %w", err)
	}
	if st.STime, err = num(12); err != nil {
		return Stat{}, fmt.Errorf("stat stime: %w", err)
	}
	if len(f) > 19 { // starttime is field 22
		if st.StartTicks, err = num(19); err != nil {
			return Stat{}, fmt.Errorf("stat starttime: %w", err)
		}
	}
	return st, nil
}

// Identity tells a process apart from a later one given the same PID: its
// executable (/proc/<pid>/exe) and its start time (/proc/<pid>/stat).
type Identity struct {
	Exe        string
	StartTicks uint64
}

// Identity reads pid's identity.
func (f FS) Identity(pid int) (Identity, error) {
	exe, err := os.Readlink(f.path("proc", strconv.Itoa(pid), "exe"))
	if err != nil {
		return Identity{}, fmt.Errorf("identity of pid %d: %w", pid, err)
	}
	b, err := os.ReadFile(f.path("proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return Identity{}, fmt.Errorf("identity of pid %d: %w", pid, err)
	}
	st, err := ParseStat(b)
	if err != nil {
		return Identity{}, fmt.Errorf("identity of pid %d: %w", pid, err)
	}
	if st.StartTicks == 0 {
		return Identity{}, fmt.Errorf("identity of pid %d: no start time in its stat", pid)
	}
	return Identity{Exe: exe, StartTicks: st.StartTicks}, nil
}

// Cores reads per-CPU jiffies from /proc/stat.
func (f FS) Cores() ([]CoreSample, error) {
	b, err := os.ReadFile(f.path("proc", "stat"))
	if err != nil {
		return nil, fmt.Errorf("read cpu times: %w", err)
	}
	return ParseProcStat(b)
}

// ParseProcStat reads the cpuN lines of /proc/stat. Busy is everything but
// idle and iowait.
func ParseProcStat(b []byte) ([]CoreSample, error) {
	var out []CoreSample
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		cpu, err := strconv.Atoi(f[0][3:])
		if err != nil {
			continue
		}
		c := CoreSample{CPU: cpu}
		// Fields 1-8: user nice system idle iowait irq softirq steal; guest
		// time is already inside user, so later fields are not added.
		for i := 1; i < len(f) && i <= 8; i++ {
			v, err := strconv.ParseUint(f[i], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("/proc/stat %s: %w", f[0], err)
			}
			c.Total += v
			if i != 4 && i != 5 {
				c.Busy += v
			}
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("/proc/stat: no cpuN lines")
	}
	return out, nil
}

// NICs reads byte counters from /proc/net/dev.
func (f FS) NICs() ([]NICSample, error) { return f.nicsAt(f.path("proc", "net", "dev")) }

func (f FS) nicsAt(path string) ([]NICSample, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read NIC counters: %w", err)
	}
	return ParseNetDev(b)
}

// ParseNetDev reads /proc/net/dev: rx bytes is the first counter, tx bytes
// the ninth.
func ParseNetDev(b []byte) ([]NICSample, error) {
	var out []NICSample
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.Contains(name, "|") {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 16 {
			return nil, fmt.Errorf("/proc/net/dev %s: %d counters, want 16", strings.TrimSpace(name), len(f))
		}
		rx, err1 := strconv.ParseUint(f[0], 10, 64)
		tx, err2 := strconv.ParseUint(f[8], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("/proc/net/dev %s: bad counter", strings.TrimSpace(name))
		}
		out = append(out, NICSample{Name: strings.TrimSpace(name), Rx: rx, Tx: tx})
	}
	return out, nil
}
