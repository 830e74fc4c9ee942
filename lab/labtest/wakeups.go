package labtest

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// SideWakeups samples pid's threads over d and returns how many times a
// second the threads other than the busiest (by CPU time) went to sleep:
// in a Go process moving bytes on one thread, that is the runtime's own
// monitor (sysmon) and its idle threads waking, which costs the CPUs the
// copies need. It also returns the busiest thread's CPU seconds, so a
// caller can check the process was busy at all.
func SideWakeups(pid int, d time.Duration) (perSecond, busiestCPU float64, err error) {
	a, err := threadStats(pid)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	time.Sleep(d)
	b, err := threadStats(pid)
	if err != nil {
		return 0, 0, err
	}
	secs := time.Since(start).Seconds()
	busiest, busiestTicks := "", int64(-1)
	for tid, s := range b {
		if p, ok := a[tid]; ok && s.ticks-p.ticks > busiestTicks {
			busiest, busiestTicks = tid, s.ticks-p.ticks
		}
	}
	var sleeps int64
	for tid, s := range b {
		if p, ok := a[tid]; ok && tid != busiest {
			sleeps += s.voluntary - p.voluntary
		}
	}
	return float64(sleeps) / secs, float64(busiestTicks) / 100, nil // USER_HZ is 100 on Linux
}

type threadStat struct{ ticks, voluntary int64 }

// threadStats reads each thread's CPU ticks (stat) and voluntary context
// switches (status). A thread that ends between the two reads is left out.
func threadStats(pid int) (map[string]threadStat, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tids, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]threadStat{}
	for _, e := range tids {
		stat, err := os.ReadFile(filepath.Join(dir, e.Name(), "stat"))
		if err != nil {
			continue
		}
		// Fields after the command's closing parenthesis: utime and stime
		// are the 12th and 13th.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) < 13 {
			return nil, fmt.Errorf("%s/%s/stat: %d fields", dir, e.Name(), len(f))
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		s := threadStat{ticks: ut + st, voluntary: -1}
		fh, err := os.Open(filepath.Join(dir, e.Name(), "status"))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "voluntary_ctxt_switches:"); ok {
				s.voluntary, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			}
		}
		fh.Close()
		if s.voluntary < 0 {
			return nil, fmt.Errorf("%s/%s/status: no voluntary_ctxt_switches", dir, e.Name())
		}
		out[e.Name()] = s
	}
	return out, nil
}
