package hostmetrics

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/infra/kernel"
	"github.com/shirou/gopsutil/v4/common"
	"github.com/shirou/gopsutil/v4/process"
)

// BenchmarkSnapshot measures one host-metrics snapshot of this process
// (sampled every 500 ms during a cell) three ways, side by side:
//   - hand: the hand-written readers hostmetrics had before infra/kernel
//     (kept below, for this comparison only);
//   - kernel: what Sampler does now (gopsutil for per-CPU times and NIC
//     counters, hand-written /proc/<pid> readers);
//   - gopsutil-faults: kernel, with the process's minor faults read through
//     gopsutil's process.PageFaults instead of the stat line already read.
//
// go test -run '^$' -bench Snapshot -benchmem ./sweeps/hostmetrics/
func BenchmarkSnapshot(b *testing.B) {
	pid := os.Getpid()
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := (handFS{"/"}).snapshot(pid); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("kernel", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := (Sampler{}).Snapshot(pid); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("gopsutil-faults", func(b *testing.B) {
		b.ReportAllocs()
		ctx := context.WithValue(context.Background(), common.EnvKey, common.EnvMap{common.HostProcEnvKey: "/proc"})
		for b.Loop() {
			s, err := (Sampler{}).Snapshot(0)
			if err != nil {
				b.Fatal(err)
			}
			pf, err := (&process.Process{Pid: int32(pid)}).PageFaultsWithContext(ctx)
			if err != nil {
				b.Fatal(err)
			}
			th, err := (Sampler{}).Kernel.Threads(pid)
			if err != nil {
				b.Fatal(err)
			}
			s.Proc = &ProcSample{PID: pid, MinFlt: pf.MinorFaults, Threads: make([]ThreadSample, len(th))}
		}
	})
}

// The kernel sampler says what the hand-written readers said of the same
// fixture tree.
func TestSamplerMatchesHandReaders(t *testing.T) {
	root := t.TempDir()
	fixture(t, root, 4242, 1000, []thread{{4242, "valkey-server", 100, 50}, {4243, "io_thd_1", 10, 10}},
		[][2]uint64{{100, 900}, {200, 800}}, [2]uint64{1000, 2000})
	old, err := (handFS{root}).snapshot(4242)
	if err != nil {
		t.Fatal(err)
	}
	now, err := Sampler{Kernel: kernel.FS{Root: root}}.Snapshot(4242)
	if err != nil {
		t.Fatal(err)
	}
	old.At, now.At = time.Time{}, time.Time{}
	if a, b := fmt.Sprintf("%+v %+v %+v %+v", old.Proc, old.Proc.Threads, old.Cores, old.NICs),
		fmt.Sprintf("%+v %+v %+v %+v", now.Proc, now.Proc.Threads, now.Cores, now.NICs); a != b {
		t.Errorf("hand readers: %s\nkernel:       %s", a, b)
	}
}

// handFS is hostmetrics' reader before infra/kernel, kept for the benchmark.
type handFS struct{ root string }

func (f handFS) path(p ...string) string { return filepath.Join(append([]string{f.root}, p...)...) }

func (f handFS) snapshot(pid int) (*Snapshot, error) {
	s := &Snapshot{At: time.Now()}
	var err error
	if s.Proc, err = f.process(pid); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(f.path("proc", "stat"))
	if err != nil {
		return nil, err
	}
	if s.Cores, err = handProcStat(b); err != nil {
		return nil, err
	}
	b, err = os.ReadFile(f.path("proc", strconv.Itoa(pid), "net", "dev"))
	if errors.Is(err, fs.ErrNotExist) {
		b, err = os.ReadFile(f.path("proc", "net", "dev"))
	}
	if err != nil {
		return nil, err
	}
	s.NICs, err = handNetDev(b)
	return s, err
}

func (f handFS) process(pid int) (*ProcSample, error) {
	b, err := os.ReadFile(f.path("proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil, err
	}
	minflt, _, _, err := handStat(b)
	if err != nil {
		return nil, err
	}
	p := &ProcSample{PID: pid, MinFlt: minflt}
	taskDir := f.path("proc", strconv.Itoa(pid), "task")
	ents, err := os.ReadDir(taskDir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		sb, err := os.ReadFile(filepath.Join(taskDir, e.Name(), "stat"))
		if err != nil {
			continue
		}
		_, ut, st, err := handStat(sb)
		if err != nil {
			return nil, err
		}
		name := ""
		if cb, err := os.ReadFile(filepath.Join(taskDir, e.Name(), "comm")); err == nil {
			name = strings.TrimRight(string(cb), "\n")
		}
		p.Threads = append(p.Threads, ThreadSample{TID: tid, Name: name, UTicks: ut, STicks: st})
	}
	sort.Slice(p.Threads, func(i, j int) bool { return p.Threads[i].TID < p.Threads[j].TID })
	return p, nil
}

func handStat(b []byte) (minflt, utime, stime uint64, err error) {
	s := string(bytes.TrimSpace(b))
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, 0, 0, fmt.Errorf("stat: %d fields", len(f))
	}
	minflt, _ = strconv.ParseUint(f[7], 10, 64)
	utime, _ = strconv.ParseUint(f[11], 10, 64)
	stime, _ = strconv.ParseUint(f[12], 10, 64)
	return minflt, utime, stime, nil
}

func handProcStat(b []byte) ([]CoreSample, error) {
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
		for i := 1; i < len(f) && i <= 8; i++ {
			v, err := strconv.ParseUint(f[i], 10, 64)
			if err != nil {
				return nil, err
			}
			c.Total += v
			if i != 4 && i != 5 {
				c.Busy += v
			}
		}
		out = append(out, c)
	}
	return out, nil
}

func handNetDev(b []byte) ([]NICSample, error) {
	var out []NICSample
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.Contains(name, "|") {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 16 {
			return nil, fmt.Errorf("net/dev %s: %d counters", name, len(f))
		}
		rx, _ := strconv.ParseUint(f[0], 10, 64)
		tx, _ := strconv.ParseUint(f[8], 10, 64)
		out = append(out, NICSample{Name: strings.TrimSpace(name), Rx: rx, Tx: tx})
	}
	return out, nil
}
