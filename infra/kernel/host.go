package kernel

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/net"
	"golang.org/x/sys/unix"
)

// CPUTimes is one CPU's time so far by kind, in ticks (UserHZ), as
// /proc/stat counts it.
type CPUTimes struct {
	CPU                                                   int
	User, Nice, System, Idle, IOWait, IRQ, SoftIRQ, Steal uint64
}

// Busy is everything but idle and iowait. Guest time is already inside
// user and nice, so it is not added again.
func (c CPUTimes) Busy() uint64 { return c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ + c.Steal }

// Total is busy, idle and iowait.
func (c CPUTimes) Total() uint64 { return c.Busy() + c.Idle + c.IOWait }

// CPUTimes reads every CPU's times from /proc/stat, through gopsutil's raw
// reader (ticks as the kernel wrote them, errors returned, not skipped).
func (f FS) CPUTimes() ([]CPUTimes, error) {
	raw, err := cpu.NewExLinux().TimesWithContext(f.gopsutil(), true)
	if err != nil {
		return nil, fmt.Errorf("read cpu times: %w", err)
	}
	out := make([]CPUTimes, 0, len(raw))
	for _, r := range raw {
		n, err := strconv.Atoi(strings.TrimPrefix(r.CPU, "cpu"))
		if err != nil {
			continue
		}
		out = append(out, CPUTimes{CPU: n, User: r.User, Nice: r.Nice, System: r.System, Idle: r.Idle,
			IOWait: r.Iowait, IRQ: r.Irq, SoftIRQ: r.Softirq, Steal: r.Steal})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("read cpu times: %s has no cpuN lines", f.Path("/proc/stat"))
	}
	return out, nil
}

// NetDev is one interface's byte counters so far.
type NetDev struct {
	Name    string
	RxBytes uint64
	TxBytes uint64
}

// NetDev reads /proc/net/dev: the interfaces of the caller's network
// namespace.
func (f FS) NetDev() ([]NetDev, error) { return f.netDev("/proc/net/dev") }

// ProcNetDev reads /proc/<pid>/net/dev: the interfaces of pid's network
// namespace (a server in the netns provider's namespace has its veth there
// and not in ours). A missing file is fs.ErrNotExist.
func (f FS) ProcNetDev(pid int) ([]NetDev, error) { return f.netDev(procPath(pid, "net", "dev")) }

func (f FS) netDev(name string) ([]NetDev, error) {
	raw, err := net.IOCountersByFileWithContext(f.gopsutil(), true, f.Path(name))
	if err != nil {
		return nil, fmt.Errorf("read NIC counters: %w", err)
	}
	out := make([]NetDev, len(raw))
	for i, r := range raw {
		out[i] = NetDev{Name: r.Name, RxBytes: r.BytesRecv, TxBytes: r.BytesSent}
	}
	return out, nil
}

// CPUInfo is what the environment record says of a host's processors.
type CPUInfo struct {
	Model string // "Intel(R) Xeon(R) …"; on arm64 the core's name (Neoverse-V2)
	CPUs  int    // processors listed in /proc/cpuinfo
}

// CPUInfo reads /proc/cpuinfo through gopsutil, which also names arm64
// cores from their part number (the kernel gives no model name there).
func (f FS) CPUInfo() (CPUInfo, error) {
	infos, err := cpu.InfoWithContext(f.gopsutil())
	if err != nil {
		return CPUInfo{}, fmt.Errorf("read cpuinfo: %w", err)
	}
	ci := CPUInfo{CPUs: len(infos)}
	for _, c := range infos {
		if c.ModelName != "" && c.ModelName != "Undefined" {
			ci.Model = c.ModelName
			break
		}
		// A part gopsutil cannot name is kept by number.
		if strings.HasPrefix(c.Model, "0x") && ci.Model == "" {
			ci.Model = "CPU part " + c.Model
		}
	}
	return ci, nil
}

// The host's name and kernel release are read by hand: gopsutil's host
// facts come from the running kernel (uname, os.Hostname), not from a root,
// and read far more (platform, virtualization, a count of every process).

// Hostname reads /proc/sys/kernel/hostname.
func (f FS) Hostname() (string, error) { return f.ReadString("/proc/sys/kernel/hostname") }

// KernelRelease reads /proc/sys/kernel/osrelease ("6.12.48+deb13-amd64").
func (f FS) KernelRelease() (string, error) { return f.ReadString("/proc/sys/kernel/osrelease") }

// Arch reads the machine the kernel runs on, as uname names it ("x86_64",
// "aarch64"): /proc/sys/kernel/arch, there since Linux 6.1. On the machine
// itself (root "/") an older kernel's comes from uname(2); under any other
// root its absence is an error, as for every file.
func (f FS) Arch() (string, error) {
	a, err := f.ReadString("/proc/sys/kernel/arch")
	if errors.Is(err, fs.ErrNotExist) && f.root() == "/" {
		var u unix.Utsname
		if uerr := unix.Uname(&u); uerr == nil {
			return unix.ByteSliceToString(u.Machine[:]), nil
		}
	}
	if err != nil {
		return "", fmt.Errorf("read architecture: %w", err)
	}
	return a, nil
}

// BootTime reads when the host booted, from the btime line of /proc/stat.
// By hand: gopsutil's boot time probes for containers first and caches the
// answer for every root after the first.
func (f FS) BootTime() (time.Time, error) {
	fh, err := os.Open(f.Path("/proc/stat"))
	if err != nil {
		return time.Time{}, fmt.Errorf("read boot time: %w", err)
	}
	defer fh.Close()
	t, err := parseBootTime(fh)
	if err != nil {
		return t, fmt.Errorf("read boot time: %s: %w", f.Path("/proc/stat"), err)
	}
	return t, nil
}

func parseBootTime(r io.Reader) (time.Time, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20) // the intr line is long on big hosts
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "btime "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("btime %q: %w", v, err)
			}
			return time.Unix(n, 0), nil
		}
	}
	if err := sc.Err(); err != nil {
		return time.Time{}, err
	}
	return time.Time{}, errors.New("no btime line")
}

// Interface is a network interface as /sys/class/net shows it.
type Interface struct {
	Name   string
	Driver string // empty for virtual interfaces (veth, lo)
	// SpeedMbps is 0 when the driver does not say (virtio, veth).
	SpeedMbps int
}

// Interfaces lists /sys/class/net with each interface's driver and speed,
// by name. By hand: gopsutil lists interfaces from the running kernel's
// netlink, not from a root, and knows no driver.
func (f FS) Interfaces() ([]Interface, error) {
	names, err := f.ReadDir("/sys/class/net")
	if err != nil {
		return nil, fmt.Errorf("list interfaces: %w", err)
	}
	out := make([]Interface, 0, len(names))
	for _, n := range names {
		i := Interface{Name: n}
		if l, err := f.Readlink("/sys/class/net/" + n + "/device/driver"); err == nil {
			i.Driver = path.Base(l)
		}
		if s, err := f.ReadString("/sys/class/net/" + n + "/speed"); err == nil {
			if v, err := strconv.Atoi(s); err == nil && v > 0 {
				i.SpeedMbps = v
			}
		}
		out = append(out, i)
	}
	return out, nil
}

// MemAvailable reads the host's available memory (MemAvailable in
// /proc/meminfo), in bytes.
func (f FS) MemAvailable() (int64, error) {
	fh, err := os.Open(f.Path("/proc/meminfo"))
	if err != nil {
		return 0, fmt.Errorf("read available memory: %w", err)
	}
	defer fh.Close()
	n, err := parseMemAvailable(fh)
	if err != nil {
		return 0, fmt.Errorf("read available memory: %s: %w", f.Path("/proc/meminfo"), err)
	}
	return n, nil
}

func parseMemAvailable(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemAvailable:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("MemAvailable %q: %w", fields[1], err)
			}
			return kb << 10, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no MemAvailable line")
}
