package kernel

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/lab/cpus"
)

// The /proc/<pid> readers are written by hand: gopsutil names no thread
// (its Threads gives CPU times by TID only), and its page-fault reader also
// reads /proc/stat for the boot time, probes for virtualization once per
// program (cached for every root after the first) and asks the running
// kernel for the priority of the pid, which on a fixture tree is another
// process. The stat line read here gives faults, CPU and start time at once.

// UserHZ is the kernel's clock tick for /proc CPU times. It is 100 on every
// Linux architecture linerate runs on (arm64, amd64); reading it would need
// cgo's sysconf.
const UserHZ = 100

// ProcStat is the part of /proc/<pid>/stat (or a task's stat) linerate uses.
type ProcStat struct {
	Comm   string
	MinFlt uint64
	UTime  uint64 // ticks (UserHZ)
	STime  uint64
	// StartTicks is when the process started, in ticks after boot (0 when
	// the line stops short of it).
	StartTicks uint64
}

// ProcStat reads /proc/<pid>/stat.
func (f FS) ProcStat(pid int) (ProcStat, error) {
	st, err := f.readStat(procPath(pid, "stat"))
	if err != nil {
		return st, fmt.Errorf("read process %d: %w", pid, err)
	}
	return st, nil
}

func (f FS) readStat(name string) (ProcStat, error) {
	fh, err := os.Open(f.Path(name))
	if err != nil {
		return ProcStat{}, err
	}
	defer fh.Close()
	return parseStat(fh)
}

func procPath(pid int, p ...string) string {
	return "/proc/" + strconv.Itoa(pid) + "/" + strings.Join(p, "/")
}

// parseStat reads a /proc/<pid>/stat or task stat line. The name may hold
// spaces and parentheses, so fields are counted from the last ')'.
func parseStat(r io.Reader) (ProcStat, error) {
	b, err := io.ReadAll(io.LimitReader(r, 4096))
	if err != nil {
		return ProcStat{}, err
	}
	s := strings.TrimSpace(string(b))
	open := strings.IndexByte(s, '(')
	closeAt := strings.LastIndexByte(s, ')')
	if open < 0 || closeAt < open {
		return ProcStat{}, fmt.Errorf("stat %q: no (comm)", s)
	}
	f := strings.Fields(s[closeAt+1:])
	// f[0] is field 3 (state): minflt is field 10, utime 14, stime 15.
	if len(f) < 13 {
		return ProcStat{}, fmt.Errorf("stat: %d fields after comm, want at least 13", len(f))
	}
	num := func(i int) (uint64, error) { return strconv.ParseUint(f[i], 10, 64) }
	st := ProcStat{Comm: s[open+1 : closeAt]}
	if st.MinFlt, err = num(7); err != nil {
		return ProcStat{}, fmt.Errorf("stat minflt: %w", err)
	}
	if st.UTime, err = num(11); err != nil {
		return ProcStat{}, fmt.Errorf("stat utime: %w", err)
	}
	if st.STime, err = num(12); err != nil {
		return ProcStat{}, fmt.Errorf("stat stime: %w", err)
	}
	if len(f) > 19 { // starttime is field 22
		if st.StartTicks, err = num(19); err != nil {
			return ProcStat{}, fmt.Errorf("stat starttime: %w", err)
		}
	}
	return st, nil
}

// Thread is one thread of a process and its CPU so far.
type Thread struct {
	TID   int
	Name  string
	UTime uint64 // ticks (UserHZ)
	STime uint64
}

// Threads reads every /proc/<pid>/task/*/{stat,comm}, by TID. Threads that
// end between listing and reading are left out.
func (f FS) Threads(pid int) ([]Thread, error) {
	tids, err := f.tasks(pid)
	if err != nil {
		return nil, err
	}
	out := make([]Thread, 0, len(tids))
	for _, tid := range tids {
		task := procPath(pid, "task", strconv.Itoa(tid))
		st, err := f.readStat(task + "/stat")
		var pe *fs.PathError
		if errors.As(err, &pe) {
			continue // the thread ended between listing and reading
		}
		if err != nil {
			return nil, fmt.Errorf("read thread %d of %d: %w", tid, pid, err)
		}
		name := st.Comm
		// comm is the name file; stat's copy is the same text in
		// parentheses, kept as a fallback.
		if b, err := f.ReadFile(task + "/comm"); err == nil {
			name = strings.TrimRight(string(b), "\n")
		}
		out = append(out, Thread{TID: tid, Name: name, UTime: st.UTime, STime: st.STime})
	}
	return out, nil
}

// tasks lists the thread IDs of pid, ascending.
func (f FS) tasks(pid int) ([]int, error) {
	names, err := f.ReadDir(procPath(pid, "task"))
	if err != nil {
		return nil, fmt.Errorf("read threads of %d: %w", pid, err)
	}
	tids := make([]int, 0, len(names))
	for _, n := range names {
		if tid, err := strconv.Atoi(n); err == nil {
			tids = append(tids, tid)
		}
	}
	slices.Sort(tids)
	return tids, nil
}

// ThreadCPUs is one thread and the CPUs it may run on.
type ThreadCPUs struct {
	TID  int
	Name string
	CPUs cpus.List // Cpus_allowed_list
}

// ThreadCPUs reads every /proc/<pid>/task/*/status: each thread's name and
// the CPUs it may run on, by TID.
func (f FS) ThreadCPUs(pid int) ([]ThreadCPUs, error) {
	tids, err := f.tasks(pid)
	if err != nil {
		return nil, err
	}
	var out []ThreadCPUs
	for _, tid := range tids {
		fh, err := os.Open(f.Path(procPath(pid, "task", strconv.Itoa(tid), "status")))
		if err != nil {
			continue // the thread ended meanwhile
		}
		t, err := parseStatus(fh)
		fh.Close()
		var pe *fs.PathError
		if errors.As(err, &pe) {
			continue // it ended while being read
		}
		if err != nil {
			return nil, fmt.Errorf("read thread %d of %d: %w", tid, pid, err)
		}
		t.TID = tid
		out = append(out, t)
	}
	return out, nil
}

// parseStatus reads the name and Cpus_allowed_list of a status file.
func parseStatus(r io.Reader) (ThreadCPUs, error) {
	var t ThreadCPUs
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		switch k {
		case "Name":
			t.Name = strings.TrimSpace(v)
		case "Cpus_allowed_list":
			l, err := cpus.Parse(v)
			if err != nil {
				return t, fmt.Errorf("status Cpus_allowed_list: %w", err)
			}
			t.CPUs = l
		}
	}
	return t, sc.Err()
}

// Identity tells a process apart from a later one given the same PID: its
// executable (/proc/<pid>/exe) and its start time (/proc/<pid>/stat).
type Identity struct {
	Exe        string
	StartTicks uint64
}

// Identity reads pid's identity.
func (f FS) Identity(pid int) (Identity, error) {
	exe, err := f.Readlink(procPath(pid, "exe"))
	if err != nil {
		return Identity{}, fmt.Errorf("identity of pid %d: %w", pid, err)
	}
	st, err := f.readStat(procPath(pid, "stat"))
	if err != nil {
		return Identity{}, fmt.Errorf("identity of pid %d: %w", pid, err)
	}
	if st.StartTicks == 0 {
		return Identity{}, fmt.Errorf("identity of pid %d: no start time in its stat", pid)
	}
	return Identity{Exe: exe, StartTicks: st.StartTicks}, nil
}

// InNetns lists the processes whose network namespace (/proc/<pid>/ns/net)
// is the namespace file nsPath, a path outside the root such as a bind mount
// under /run/netns. Processes that end while being looked at are left out.
func (f FS) InNetns(nsPath string) ([]int, error) {
	target, err := os.Stat(nsPath)
	if err != nil {
		return nil, fmt.Errorf("processes in netns %s: %w", nsPath, err)
	}
	names, err := f.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("processes in netns %s: %w", nsPath, err)
	}
	var pids []int
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		// Stat follows the ns/net link to the namespace's inode, the
		// identity a bind mount of the same namespace shares.
		if st, err := f.Stat(procPath(pid, "ns", "net")); err == nil && os.SameFile(st, target) {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids, nil
}
