// Package labbench holds the side-by-side benchmarks behind `make bench`:
// linerate against the peer benchmark tool on the same server and cells, and
// linerate's own ceiling (against linerate sink) next to iperf3 on loopback.
// They print ratios measured in one run; they assert nothing about speed,
// since these machines are shared and noisy.
package labbench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
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

const (
	benchConns   = 8
	benchThreads = 2
	benchKeys    = 16 // 16 x 64 MiB fits in memory; the peer's -r draws from the same keys
	benchWindow  = 4 * time.Second
)

// measured is one run of either tool.
type measured struct {
	gbps     float64
	cpuPerGB float64 // whole-process CPU seconds per GB of payload
	done     bool
	note     string
}

func cpuSeconds(ps *os.ProcessState) float64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// runLinerate runs the CLI without warmup so its whole-process CPU compares
// with the peer's whole-process CPU.
// extra are more bench flags (--tls --cacert FILE).
func runLinerate(b *testing.B, bin string, port int, op lab.Op, size int64, prefill bool, extra ...string) measured {
	out := filepath.Join(b.TempDir(), "r.json")
	ratio := "100:0"
	if op == lab.OpSet {
		ratio = "0:100"
	}
	args := []string{"bench", "--quiet", "-p", strconv.Itoa(port), "-c", strconv.Itoa(benchConns), "-t", strconv.Itoa(benchThreads),
		"-n", strconv.Itoa(benchKeys), "--key-size", "16", "-s", strconv.FormatInt(size, 10), "-r", ratio,
		"-d", benchWindow.String(), "--json", out}
	if prefill {
		args = append(args, "--prefill")
	}
	args = append(args, extra...)
	cmd := exec.Command(bin, args...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return measured{note: fmt.Sprintf("linerate failed: %v %s", err, lastLine(string(msg)))}
	}
	r := readRecord(b, out)
	var ops uint64
	for ph, p := range r.Phases {
		if ph != lab.PhasePrefill {
			ops += p.Ops[op]
		}
	}
	gb := float64(ops) * float64(size) / 1e9
	cpu := cpuSeconds(cmd.ProcessState)
	if prefill { // take the prefill's share off: the peer does not prefill
		cpu *= float64(ops) / float64(ops+r.Phases[lab.PhasePrefill].Ops[lab.OpSet])
	}
	return measured{gbps: r.Ops[op].Gbps, cpuPerGB: cpu / gb, done: true}
}

// readRecord reads a bench record the CLI wrote.
func readRecord(b *testing.B, path string) *lab.Result {
	var r lab.Result
	data, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(data, &r)
	}
	if err != nil {
		b.Fatalf("read record: %v", err)
	}
	return &r
}

// runPeer runs valkey-benchmark or redis-benchmark for the same window as
// linerate and reads its own progress line: how many requests it completed
// and its overall rate. A peer that completes none scores zero. extra are
// more of its flags (--tls --cacert FILE).
func runPeer(b *testing.B, peer string, port int, op lab.Op, size int64, extra ...string) measured {
	args := []string{"-p", strconv.Itoa(port), "-c", strconv.Itoa(benchConns), "--threads", strconv.Itoa(benchThreads),
		"-r", strconv.Itoa(benchKeys), "-d", strconv.FormatInt(size, 10), "-n", "100000000",
		"-t", strings.ToLower(string(op)), "-q"}
	args = append(args, extra...)
	cmd := exec.Command(peer, args...)
	var outb strings.Builder
	cmd.Stdout = &outb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stop := time.AfterFunc(benchWindow, func() { _ = cmd.Process.Signal(syscall.SIGINT) })
	kill := time.AfterFunc(benchWindow+5*time.Second, func() { _ = cmd.Process.Kill() })
	_ = cmd.Wait()
	stop.Stop()
	kill.Stop()
	elapsed := time.Since(start)
	out := outb.String()
	done := lastMatch(progressDone, out)
	if done == 0 {
		return measured{done: true, note: fmt.Sprintf("%s completed no request in %s", filepath.Base(peer), elapsed.Round(time.Second))}
	}
	rps := lastMatch(progressRate, out)
	gb := done * float64(size) / 1e9
	return measured{gbps: rps * float64(size) * 8 / 1e9, cpuPerGB: cpuSeconds(cmd.ProcessState) / gb, done: true}
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

func median(xs []measured, f func(measured) float64) (float64, bool) {
	var v []float64
	for _, x := range xs {
		if x.done {
			v = append(v, f(x))
		}
	}
	if len(v) == 0 {
		return 0, false
	}
	sort.Float64s(v)
	return v[len(v)/2], true
}

// benchSetup is the server and peer tool of the comparison.
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
			fmt.Printf("note: server store unavailable (%v); using the system's redis\n", err)
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

// BenchmarkVersusPeer: the same server, the same cells, the two clients in
// alternation (linerate, peer, linerate, peer).
func BenchmarkVersusPeer(b *testing.B) {
	bin := labtest.Binary(b)
	su := setup(b)
	peer := su.peer
	srv := labtest.StartServerEnv(b, su.server, su.env, "--io-threads", "2")
	info := labtest.Info(b, srv.Addr, "server")
	fmt.Printf("\nlinerate vs %s: server %s %s, -c %d, %d threads, %d keys, loopback, %s\n",
		filepath.Base(peer), serverName(info), serverVersion(info), benchConns, benchThreads, benchKeys, hostLine())
	fmt.Printf("%-5s %-6s %10s %10s %7s %12s %12s %7s  %s\n", "op", "size", "lr Gbps", "peer Gbps", "ratio", "lr CPU-s/GB", "peer CPU-s/GB", "ratio", "notes")
	for _, size := range []int64{1 << 20, 8 << 20, 64 << 20} {
		for _, op := range []lab.Op{lab.OpGet, lab.OpSet} {
			var lr, pr []measured
			var notes []string
			for round := 0; round < 2; round++ {
				m := runLinerate(b, bin, srv.Port, op, size, op == lab.OpGet && round == 0)
				lr = append(lr, m)
				p := runPeer(b, peer, srv.Port, op, size)
				pr = append(pr, p)
				for _, x := range []measured{m, p} {
					if x.note != "" {
						notes = append(notes, x.note)
					}
				}
			}
			lg, _ := median(lr, func(m measured) float64 { return m.gbps })
			lc, _ := median(lr, func(m measured) float64 { return m.cpuPerGB })
			pg, pok := median(pr, func(m measured) float64 { return m.gbps })
			pc, _ := median(pr, func(m measured) float64 { return m.cpuPerGB })
			gr, cr := "-", "-"
			switch {
			case pok && pg > 0:
				gr = fmt.Sprintf("%.2fx", lg/pg)
				cr = fmt.Sprintf("%.2fx", lc/pc)
			case pok:
				gr, cr = "inf", "-" // the peer moved nothing: no cost per GB to compare
			}
			fmt.Printf("%-5s %-6s %10.2f %10.2f %7s %12.3f %12.3f %7s  %s\n", op, lab.Size(size), lg, pg, gr, lc, pc, cr, strings.Join(dedupe(notes), "; "))
		}
	}
	fmt.Println("targets: Gbps ratio >= 1.0x; GET CPU-s/GB ratio <= 0.5x. CPU is whole-process (user+sys); on loopback the kernel work of both ends lands in whichever process is running.")
}

// BenchmarkCeilingVersusIperf3: linerate against its own sink, next to
// iperf3 with 8 flows, on loopback.
func BenchmarkCeilingVersusIperf3(b *testing.B) {
	bin := labtest.Binary(b)
	iperf := iperf3Binary(b)
	ver, _ := exec.Command(iperf, "--version").Output()
	fmt.Printf("\nclient ceiling: linerate vs linerate sink, next to %s with 8 flows, loopback, %s\n", strings.Fields(string(ver) + " iperf3 ?")[1], hostLine())
	var lr, ip []float64
	for round := 0; round < 2; round++ {
		lr = append(lr, sinkRun(b, bin))
		ip = append(ip, iperfRun(b, iperf))
	}
	sort.Float64s(lr)
	sort.Float64s(ip)
	fmt.Printf("linerate GET 8MiB vs sink: %.2f Gbps; iperf3 -P 8: %.2f Gbps; ratio %.2fx (target >= 0.9x)\n", lr[1], ip[1], lr[1]/ip[1])
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
	fmt.Printf("note: private iperf3 from trixie unavailable (%v); using the system's\n", err)
	return labtest.Need(b, "iperf3")
}

func sinkRun(b *testing.B, bin string) float64 {
	sink := labtest.StartSink(b, bin, nil, "-s", "8MiB")
	defer sink.Stop()
	out := filepath.Join(b.TempDir(), "r.json")
	cmd := exec.Command(bin, "bench", "--quiet", "-p", strconv.Itoa(sink.Port), "-c", "8", "-t", "2", "-s", "8MiB", "--warmup", "1s",
		"-d", benchWindow.String(), "--json", out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("bench vs sink: %v %s", err, msg)
	}
	var r lab.Result
	data, _ := os.ReadFile(out)
	if err := json.Unmarshal(data, &r); err != nil {
		b.Fatal(err)
	}
	return r.Ops[lab.OpGet].Gbps
}

func iperfRun(b *testing.B, iperf string) float64 {
	port := strconv.Itoa(labtest.FreePort(b))
	srv := exec.Command(iperf, "-s", "-1", "-B", "127.0.0.1", "-p", port)
	if err := srv.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	time.Sleep(300 * time.Millisecond)
	out, err := exec.Command(iperf, "-c", "127.0.0.1", "-p", port, "-P", "8", "-t", strconv.Itoa(int(benchWindow.Seconds())), "-J").Output()
	if err != nil {
		b.Fatalf("iperf3: %v", err)
	}
	var r struct {
		End struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		b.Fatal(err)
	}
	return r.End.SumReceived.BitsPerSecond / 1e9
}

func serverName(info map[string]string) string {
	if _, ok := info["valkey_version"]; ok {
		return "valkey"
	}
	return "redis"
}

func serverVersion(info map[string]string) string {
	if v, ok := info["valkey_version"]; ok {
		return v
	}
	return info["redis_version"]
}

func hostLine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	n, _ := exec.Command("nproc").Output()
	return fmt.Sprintf("%s x %s CPUs", model, strings.TrimSpace(string(n)))
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
