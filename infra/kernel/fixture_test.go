package kernel

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/lab/cpus"
)

// testdata/x86 is a host unlike this machine (3 CPUs named "Fixture Xeon",
// an interface fx0, process 4242), so a reader that went to the real /proc
// instead of the root, gopsutil's included, fails here.
var fixture = FS{Root: "testdata/x86"}

func TestFixtureCPUTimes(t *testing.T) {
	got, err := fixture.CPUTimes()
	if err != nil {
		t.Fatal(err)
	}
	want := []CPUTimes{
		{CPU: 0, User: 100, Nice: 1, System: 50, Idle: 3000, IOWait: 10, SoftIRQ: 10, Steal: 1},
		{CPU: 1, User: 200, Nice: 2, System: 100, Idle: 3000, IOWait: 10, SoftIRQ: 20, Steal: 2},
		{CPU: 2, User: 300, Nice: 3, System: 150, Idle: 3000, IOWait: 10, SoftIRQ: 30, Steal: 3},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("cpu times\n got %+v\nwant %+v", got, want)
	}
	// cpu0's guest time (7) is inside its user time: not counted twice.
	if got[0].Busy() != 162 || got[0].Total() != 3172 {
		t.Errorf("cpu0 busy %d total %d, want 162 and 3172", got[0].Busy(), got[0].Total())
	}
}

func TestFixtureNetDev(t *testing.T) {
	got, err := fixture.NetDev()
	want := []NetDev{{"lo", 1000, 1000}, {"fx0", 123456789, 987654321}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("net/dev = %+v, %v; want %+v", got, err, want)
	}
	got, err = fixture.ProcNetDev(4242)
	want = []NetDev{{"lo", 0, 0}, {"veth1", 4000, 8000}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("process 4242's net/dev = %+v, %v; want %+v", got, err, want)
	}
	if _, err := fixture.ProcNetDev(1); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a process without net/dev: %v, want fs.ErrNotExist", err)
	}
}

func TestFixtureHostFacts(t *testing.T) {
	ci, err := fixture.CPUInfo()
	if err != nil || ci != (CPUInfo{Model: "Fixture Xeon 9999 @ 1.00GHz", CPUs: 3}) {
		t.Errorf("cpuinfo = %+v, %v", ci, err)
	}
	if h, err := fixture.Hostname(); err != nil || h != "fixture-host" {
		t.Errorf("hostname = %q, %v", h, err)
	}
	if r, err := fixture.KernelRelease(); err != nil || r != "9.9.9-fixture" {
		t.Errorf("kernel release = %q, %v", r, err)
	}
	if a, err := fixture.Arch(); err != nil || a != "x86_64" {
		t.Errorf("arch = %q, %v", a, err)
	}
	if b, err := fixture.BootTime(); err != nil || !b.Equal(time.Unix(1700000000, 0)) {
		t.Errorf("boot time = %v, %v", b, err)
	}
	ifs, err := fixture.Interfaces()
	want := []Interface{{Name: "fx0", Driver: "ena", SpeedMbps: 25000}, {Name: "lo"}}
	if err != nil || !reflect.DeepEqual(ifs, want) {
		t.Errorf("interfaces = %+v, %v; want %+v", ifs, err, want)
	}
}

// arm64 kernels give no model name: gopsutil names the core from its part,
// and a part it does not know is kept by number.
func TestCPUInfoArm(t *testing.T) {
	for _, tc := range []struct{ part, want string }{
		{"0xd4f", "Neoverse-V2"},
		{"0xfff", "CPU part 0xfff"},
	} {
		root := t.TempDir()
		var b strings.Builder
		for i := range 2 {
			b.WriteString("processor\t: " + string(rune('0'+i)) + "\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd\n" +
				"CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: " + tc.part + "\nCPU revision\t: 1\n\n")
		}
		writeFile(t, root, "proc/cpuinfo", b.String())
		ci, err := FS{Root: root}.CPUInfo()
		if err != nil || ci != (CPUInfo{Model: tc.want, CPUs: 2}) {
			t.Errorf("part %s: %+v, %v; want %q on 2 CPUs", tc.part, ci, err, tc.want)
		}
	}
}

func TestFixtureProcess(t *testing.T) {
	st, err := fixture.ProcStat(4242)
	if err != nil || st != (ProcStat{Comm: "valkey-server", MinFlt: 5000, UTime: 300, STime: 100, StartTicks: 777}) {
		t.Errorf("stat = %+v, %v", st, err)
	}
	th, err := fixture.Threads(4242)
	want := []Thread{
		{TID: 4242, Name: "valkey-server", UTime: 200, STime: 50},
		{TID: 4243, Name: "io_thd_1", UTime: 70, STime: 30},
		{TID: 4250, Name: "bio (lazy) free", UTime: 30, STime: 20}, // no comm: stat's name
	}
	if err != nil || !reflect.DeepEqual(th, want) {
		t.Errorf("threads = %+v, %v\nwant %+v", th, err, want)
	}
	got, err := fixture.ThreadCPUs(4242)
	wantCPUs := []ThreadCPUs{
		{TID: 4242, Name: "valkey-server", CPUs: cpus.List{0, 1}},
		{TID: 4243, Name: "io_thd_1", CPUs: cpus.List{0, 1}},
		{TID: 4250, Name: "bio_lazy_free", CPUs: cpus.List{0, 1, 2}},
	}
	if err != nil || !reflect.DeepEqual(got, wantCPUs) {
		t.Errorf("thread cpus = %+v, %v\nwant %+v", got, err, wantCPUs)
	}
	id, err := fixture.Identity(4242)
	if err != nil || id != (Identity{Exe: "/usr/bin/fixture-server", StartTicks: 777}) {
		t.Errorf("identity = %+v, %v", id, err)
	}
	if _, err := fixture.Threads(1); err == nil || !strings.Contains(err.Error(), "threads of 1") {
		t.Errorf("threads of a missing process: %v", err)
	}
}

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ProcStat
		err  string
	}{
		{in: "77 (we (ird) name) R 1 1 1 0 -1 0 42 0 0 0 7 9 0 0 20 0 1 0 5 6 7", want: ProcStat{Comm: "we (ird) name", MinFlt: 42, UTime: 7, STime: 9, StartTicks: 5}},
		{in: "77 (short) R 1 1 1 0 -1 0 42 0 0 0 7 9\n", want: ProcStat{Comm: "short", MinFlt: 42, UTime: 7, STime: 9}},
		{in: "77 no comm here", err: "no (comm)"},
		{in: "77 (x) R 1 1", err: "want at least 13"},
		{in: "77 (x) R 1 1 1 0 -1 0 x 0 0 0 7 9", err: "minflt"},
	} {
		got, err := parseStat(strings.NewReader(tc.in))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %+v, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

// The architecture is the root's, not this machine's.
func TestArchOfRoot(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "proc/sys/kernel/arch", "aarch64\n")
	if a, err := (FS{Root: root}).Arch(); err != nil || a != "aarch64" {
		t.Errorf("arch = %q, %v; want aarch64", a, err)
	}
}

// A root that lacks the files says so, naming what it read.
func TestEmptyRoot(t *testing.T) {
	empty := FS{Root: t.TempDir()}
	for name, err := range map[string]error{
		"cpu times":   second(empty.CPUTimes()),
		"net/dev":     second(empty.NetDev()),
		"cpuinfo":     second(empty.CPUInfo()),
		"boot time":   second(empty.BootTime()),
		"arch":        second(empty.Arch()),
		"identity":    second(empty.Identity(1)),
		"stat":        second(empty.ProcStat(1)),
		"interfaces":  second(empty.Interfaces()),
		"thread cpus": second(empty.ThreadCPUs(1)),
	} {
		if err == nil || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s on an empty root: %v, want a not-exist error", name, err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

// Names cannot climb out of the root.
func TestPathStaysUnderRoot(t *testing.T) {
	for name, want := range map[string]string{
		"/proc/stat":          "/r/proc/stat",
		"proc/stat":           "/r/proc/stat",
		"/../../etc/shadow":   "/r/etc/shadow",
		"/proc/../../../etc/": "/r/etc",
	} {
		if got := (FS{Root: "/r"}).Path(name); got != want {
			t.Errorf("Path(%q) = %q, want %q", name, got, want)
		}
	}
	if got := (FS{}).Path("/proc/stat"); got != "/proc/stat" {
		t.Errorf("the zero FS is this host: %q", got)
	}
}

// Writes go into existing kernel files and never create one there; other
// files (irqbalance's config) are created.
func TestWriteFile(t *testing.T) {
	root := t.TempDir()
	f := FS{Root: root}
	writeFile(t, root, "proc/sys/net/core/rmem_max", "212992\n")
	if err := f.WriteFile("/proc/sys/net/core/rmem_max", []byte("1\n")); err != nil {
		t.Fatal(err)
	}
	if s, _ := f.ReadString("/proc/sys/net/core/rmem_max"); s != "1" {
		t.Errorf("after write: %q", s)
	}
	if err := f.WriteFile("/proc/sys/net/core/nope", []byte("1\n")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a kernel file that does not exist: %v", err)
	}
	if err := f.WriteFile("/etc/default/irqbalance", []byte("X=1\n")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no /etc/default: %v", err) // the directory is not made
	}
	writeFile(t, root, "etc/default/.keep", "")
	if err := f.WriteFile("/etc/default/irqbalance", []byte("X=1\n")); err != nil {
		t.Errorf("a config file is created: %v", err)
	}
}

func writeFile(t *testing.T, root, name, s string) {
	t.Helper()
	p := filepath.Join(root, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFixtureMemAvailable(t *testing.T) {
	if got, err := fixture.MemAvailable(); err != nil || got != 4<<30 {
		t.Errorf("MemAvailable = %d, %v; want 4 GiB", got, err)
	}
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"MemTotal:  8000 kB\nMemFree: 10 kB\nMemAvailable:    2048 kB\n", 2048 << 10, true},
		{"MemTotal:  8000 kB\n", 0, false},
		{"MemAvailable: x kB\n", 0, false},
	} {
		got, err := parseMemAvailable(strings.NewReader(tc.in))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseMemAvailable(%q) = %d, %v", tc.in, got, err)
		}
	}
	if _, err := (FS{Root: t.TempDir()}).MemAvailable(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no meminfo under the root: %v, want fs.ErrNotExist", err)
	}
}
