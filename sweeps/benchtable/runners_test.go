package benchtable

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/linerate/linerate/infra/debpkg"
	"github.com/linerate/linerate/infra/servers/serverstest"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/labtest"
)

// The cells of the comparisons against valkey-benchmark (and the paced
// one): both clients alike.
const (
	benchConns   = 8
	benchThreads = 2
	benchKeys    = 16 // 16 x 64 MiB fits in memory; the peer's -r draws from the same keys
	benchWindow  = 3 * time.Second
)

// runLimit bounds one run of either tool beyond its window: a prefill of
// 16 x 64 MiB over TLS, a start, an exit.
const runLimit = 2 * time.Minute

// cpuTime is a finished process's CPU seconds, in user space and in the
// kernel.
type cpuTime struct{ user, sys float64 }

func (c cpuTime) total() float64 { return c.user + c.sys }

func (c cpuTime) scaled(k float64) cpuTime { return cpuTime{c.user * k, c.sys * k} }

func cpuOf(ps *os.ProcessState) cpuTime {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return cpuTime{}
	}
	return cpuTime{time.Duration(ru.Utime.Nano()).Seconds(), time.Duration(ru.Stime.Nano()).Seconds()}
}

// benchCLI runs `linerate bench --quiet --json FILE args...`, bounded by
// its window plus runLimit, and returns its record and the process's CPU
// time. A run that fails says why in its error (the CLI's last line).
func benchCLI(b *testing.B, bin string, window time.Duration, args ...string) (*lab.Result, cpuTime, error) {
	out := filepath.Join(b.TempDir(), "r.json")
	ctx, cancel := context.WithTimeout(context.Background(), window+runLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"bench", "--quiet", "--json", out}, args...)...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, cpuTime{}, fmt.Errorf("linerate bench: %v %s", err, lastLine(string(msg)))
	}
	var r lab.Result
	data, err := os.ReadFile(out)
	if err == nil {
		err = json.Unmarshal(data, &r)
	}
	if err != nil {
		return nil, cpuTime{}, fmt.Errorf("linerate bench record: %w", err)
	}
	return &r, cpuOf(cmd.ProcessState), nil
}

// run is one run of either tool in a cell; a failed run's figures are
// NaN and its note says why. userPerGB is the user-space share of
// cpuPerGB: the tool's own work, where the rest is the kernel's.
type run struct {
	gbps, cpuPerGB, userPerGB float64
	note                      string
}

func failed(note string) run {
	return run{gbps: math.NaN(), cpuPerGB: math.NaN(), userPerGB: math.NaN(), note: note}
}

// moved is the run of a tool that moved gb gigabytes at gbps on cpu.
func moved(gbps, gb float64, cpu cpuTime) run {
	return run{gbps: gbps, cpuPerGB: cpu.total() / gb, userPerGB: cpu.user / gb}
}

// each is one figure of every run.
func each(rs []run, f func(run) float64) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = f(r)
	}
	return out
}

func notes(rs ...[]run) []string {
	var out []string
	for _, s := range rs {
		for _, r := range s {
			out = append(out, r.note)
		}
	}
	return out
}

// runLinerate is one linerate run of a cell against port, without warmup
// so its whole-process CPU compares with the peer's whole-process CPU;
// extra are more bench flags (--tls --cacert FILE).
func runLinerate(b *testing.B, bin string, port int, op lab.Op, size int64, prefill bool, extra ...string) run {
	args := cellArgs(port, op, size)
	if prefill {
		args = append(args, "--prefill")
	}
	r, cpu, err := benchCLI(b, bin, benchWindow, append(args, extra...)...)
	if err != nil {
		return failed(err.Error())
	}
	var ops uint64
	for ph, p := range r.Phases {
		if ph != lab.PhasePrefill {
			ops += p.Ops[op]
		}
	}
	if ops == 0 {
		return failed("linerate completed no request")
	}
	if prefill { // take the prefill's share off: the peer does not prefill
		cpu = cpu.scaled(float64(ops) / float64(ops+r.Phases[lab.PhasePrefill].Ops[lab.OpSet]))
	}
	return moved(r.Ops[op].Gbps, float64(ops)*float64(size)/1e9, cpu)
}

// cellArgs are linerate's flags for a cell of the peer comparison against
// port: the peer's -c, --threads, -r and -d, one op, the window.
func cellArgs(port int, op lab.Op, size int64) []string {
	ratio := "100:0"
	if op == lab.OpSet {
		ratio = "0:100"
	}
	return []string{"-p", strconv.Itoa(port), "-c", strconv.Itoa(benchConns), "-t", strconv.Itoa(benchThreads),
		"-n", strconv.Itoa(benchKeys), "--key-size", "16", "-s", strconv.FormatInt(size, 10), "-r", ratio,
		"-d", benchWindow.String()}
}

// runPeer runs valkey-benchmark (or redis-benchmark) for the same window
// and reads its own progress line (peerRun). extra are more of its flags
// (--tls --cacert FILE).
func runPeer(b *testing.B, peer string, port int, op lab.Op, size int64, extra ...string) run {
	args := []string{"-p", strconv.Itoa(port), "-c", strconv.Itoa(benchConns), "--threads", strconv.Itoa(benchThreads),
		"-r", strconv.Itoa(benchKeys), "-d", strconv.FormatInt(size, 10), "-n", "100000000",
		"-t", strings.ToLower(string(op)), "-q"}
	ctx, cancel := context.WithTimeout(context.Background(), benchWindow+10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, peer, append(args, extra...)...)
	var outb strings.Builder
	cmd.Stdout = &outb
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stop := time.AfterFunc(benchWindow, func() { _ = cmd.Process.Signal(syscall.SIGINT) })
	_ = cmd.Wait()
	stop.Stop()
	return peerRun(filepath.Base(peer), outb.String(), size, cpuOf(cmd.ProcessState))
}

// peerRun reads a peer's progress output: how many requests it completed
// and its overall rate; cpu is its CPU time. A peer that completed no
// request gave no figure (NaN, the row not measured): its rate is not
// zero, only longer than the window, and a ratio against it would read as
// linerate infinitely faster.
func peerRun(peer, out string, size int64, cpu cpuTime) run {
	done := lastMatch(progressDone, out)
	if done == 0 {
		return failed(fmt.Sprintf("%s completed no request in a %s window", peer, benchWindow))
	}
	rps := lastMatch(progressRate, out)
	return moved(rps*float64(size)*8/1e9, done*float64(size)/1e9, cpu)
}

var (
	progressDone = regexp.MustCompile(`\) (\d+) requests`)
	progressRate = regexp.MustCompile(`rps=[0-9.]+ \(overall: ([0-9.]+)\)`) // not avg_msec's "overall"
)

func lastMatch(re *regexp.Regexp, s string) float64 {
	m := re.FindAllStringSubmatch(s, -1)
	if len(m) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(m[len(m)-1][1], 64)
	return v
}

func lastLine(s string) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return l[len(l)-1]
}

// benchSetup is the server and peer tool of the comparisons.
type benchSetup struct {
	server, peer string
	env          []string
}

// setup picks valkey 9.1 from linerate's server store on sid's runtime with
// MALLOC_CONF=oversize_threshold:0 (the allocator setting under which a
// server on this kind of VM is not page-fault bound) and the valkey-benchmark
// built with it. $LINERATE_BENCH_SERVER and $LINERATE_BENCH_PEER override;
// outside CI, a store that cannot be had falls back to the system's redis.
func setup(b *testing.B) benchSetup {
	s := benchSetup{server: os.Getenv("LINERATE_BENCH_SERVER"), peer: os.Getenv("LINERATE_BENCH_PEER")}
	if s.server == "" || s.peer == "" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		inst, err := serverstest.InstallValkey(ctx)
		switch {
		case err == nil:
			if s.server == "" {
				s.server, s.env = inst.Server, []string{"MALLOC_CONF=oversize_threshold:0"}
			}
			if s.peer == "" {
				s.peer = filepath.Join(filepath.Dir(inst.Server), "valkey-benchmark")
			}
		case os.Getenv("CI") != "":
			b.Fatalf("server store: %v", err)
		default:
			fmt.Fprintf(os.Stderr, "bench: note: server store unavailable (%v); using the system's redis\n", err)
			if s.server == "" {
				s.server = labtest.Need(b, "redis-server")
			}
			if s.peer == "" {
				s.peer = labtest.Need(b, "redis-benchmark")
			}
		}
	}
	return s
}

// serverLine names the server behind addr: "valkey 9.1.2".
func serverLine(b *testing.B, addr string) string {
	info := labtest.Info(b, addr, "server")
	if v, ok := info["valkey_version"]; ok {
		return "valkey " + v
	}
	return "redis " + info["redis_version"]
}

// iperf3Binary is $LINERATE_BENCH_IPERF3, else iperf3 3.16+ from trixie
// unpacked privately under the linerate home (bookworm's 3.12 runs all
// flows on one thread and would understate raw TCP).
func iperf3Binary(b *testing.B) string {
	if p := os.Getenv("LINERATE_BENCH_IPERF3"); p != "" {
		return p
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p, err := debpkg.Tool(ctx, "trixie", "iperf3")
	if err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		b.Fatalf("private iperf3 from trixie: %v", err)
	}
	fmt.Fprintf(os.Stderr, "bench: note: private iperf3 from trixie unavailable (%v); using the system's\n", err)
	return labtest.Need(b, "iperf3")
}

// iperf3Version is "iperf3 3.18" or the path when it does not say.
func iperf3Version(iperf string) string {
	out, _ := exec.Command(iperf, "--version").Output()
	if f := strings.Fields(string(out)); len(f) > 1 {
		return "iperf3 " + f[1]
	}
	return iperf
}
