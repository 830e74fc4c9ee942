package kernel

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/lab/cpus"

	"golang.org/x/sys/unix"
)

// The zero FS reads this machine; what it says agrees with what the kernel
// says through system calls.
var here FS

func TestRealHost(t *testing.T) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	if r, err := here.KernelRelease(); err != nil || r != unix.ByteSliceToString(u.Release[:]) {
		t.Errorf("kernel release %q, %v; uname says %q", r, err, unix.ByteSliceToString(u.Release[:]))
	}
	if h, err := here.Hostname(); err != nil || h != unix.ByteSliceToString(u.Nodename[:]) {
		t.Errorf("hostname %q, %v; uname says %q", h, err, unix.ByteSliceToString(u.Nodename[:]))
	}
	// The kernel's machine as the uname command says it, not uname(2) in
	// this process: under qemu-user (the arm64 test run) that answers the
	// emulated machine, while the kernel, and a native uname, say the real
	// one. A record from there says both (arch x86_64, goarch arm64).
	if out, err := exec.Command("uname", "-m").Output(); err != nil {
		t.Errorf("uname -m: %v", err)
	} else if a, err := here.Arch(); err != nil || a != strings.TrimSpace(string(out)) {
		t.Errorf("arch %q, %v; uname -m says %q", a, err, strings.TrimSpace(string(out)))
	}
	ci, err := here.CPUInfo()
	if err != nil || ci.Model == "" || ci.CPUs < runtime.NumCPU() {
		t.Errorf("cpuinfo %+v, %v; want a model and at least the %d CPUs this process may use", ci, err, runtime.NumCPU())
	}
	var info unix.Sysinfo_t
	if err := unix.Sysinfo(&info); err != nil {
		t.Fatal(err)
	}
	boot, err := here.BootTime()
	// btime is whole seconds and uptime keeps ticking: a few seconds apart at most.
	if d := time.Since(boot) - time.Duration(info.Uptime)*time.Second; err != nil || d < -5*time.Second || d > 5*time.Second {
		t.Errorf("boot time %v (%v); sysinfo's uptime says %ds ago", boot, err, info.Uptime)
	}
	ifs, err := here.Interfaces()
	if err != nil || !slices.ContainsFunc(ifs, func(i Interface) bool { return i.Name == "lo" && i.Driver == "" }) {
		t.Errorf("interfaces %+v, %v; want lo without a driver", ifs, err)
	}
	devs, err := here.NetDev()
	if err != nil || !slices.ContainsFunc(devs, func(d NetDev) bool { return d.Name == "lo" }) {
		t.Errorf("net/dev %+v, %v; want lo", devs, err)
	}
}

// CPU time goes on: every CPU counts a tick in 100 ms, busy or idle.
func TestRealCPUTimes(t *testing.T) {
	a, err := here.CPUTimes()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	b, err := here.CPUTimes()
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != len(b) || len(a) < runtime.NumCPU() {
		t.Fatalf("%d then %d CPUs; this process may use %d", len(a), len(b), runtime.NumCPU())
	}
	var before, after uint64
	for i := range a {
		before += a[i].Total()
		after += b[i].Total()
	}
	if after <= before {
		t.Errorf("total ticks %d then %d", before, after)
	}
}

// Our own process: the threads Go started, each allowed on the CPUs the
// kernel says this process may use, and an identity a child does not share.
func TestRealProcess(t *testing.T) {
	pid := os.Getpid()
	th, err := here.Threads(pid)
	if err != nil || len(th) < 2 || th[0].TID != pid {
		t.Fatalf("threads %+v, %v; want the main thread first and more", th, err)
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	var allowed cpus.List
	for c := range cpus.Max {
		if set.IsSet(c) {
			allowed = append(allowed, c)
		}
	}
	tc, err := here.ThreadCPUs(pid)
	if err != nil || len(tc) < 2 {
		t.Fatalf("thread cpus %+v, %v", tc, err)
	}
	for _, x := range tc {
		if !x.CPUs.Equal(allowed) {
			t.Errorf("thread %d %s may run on %s; sched_getaffinity says %s", x.TID, x.Name, x.CPUs, allowed)
		}
	}
	st, err := here.ProcStat(pid)
	if err != nil || st.StartTicks == 0 || st.Comm != "kernel.test" {
		t.Errorf("stat %+v, %v", st, err)
	}

	self, err := here.Identity(pid)
	exe, _ := os.Executable()
	// qemu-user makes its own /proc/self/stat up, start time included,
	// from a clock of its own at each read (2174152 then 2174246 once):
	// there the start time is not judged, only that it is there.
	emulated := os.Getenv("LINERATE_EMULATOR") != ""
	if err != nil || self.Exe != exe || (self.StartTicks != st.StartTicks && !emulated) || self.StartTicks == 0 {
		t.Fatalf("own identity %+v %v, want exe %s started at %d", self, err, exe, st.StartTicks)
	}
	sleep := exec.Command("sleep", "10")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sleep.Process.Kill(); _ = sleep.Wait() }()
	other, err := here.Identity(sleep.Process.Pid)
	if err != nil || other.Exe == self.Exe || (other.StartTicks < self.StartTicks && !emulated) {
		t.Errorf("sleep's identity %+v %v, own %+v", other, err, self)
	}
	if th, err := here.Threads(sleep.Process.Pid); err != nil || len(th) != 1 || th[0].Name != "sleep" {
		t.Errorf("sleep's threads %+v, %v", th, err)
	}
}
