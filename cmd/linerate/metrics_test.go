package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/labtest"
)

// startPrometheus runs Debian's prometheus (installed by .ci/setup) with
// its own config and storage, on loopback, scraping target every second.
// It returns the base URL of its HTTP API.
func startPrometheus(t *testing.T, target string) string {
	t.Helper()
	bin := labtest.Need(t, "prometheus")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	conf := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: linerate
    scrape_interval: 1s
    scrape_timeout: 900ms
    static_configs:
      - targets: [%q]
`, target)
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", labtest.FreePort(t))
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	logf, _ := os.Create(filepath.Join(dir, "prometheus.log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); logf.Close() })
	base := "http://" + addr
	for deadline := time.Now().Add(30 * time.Second); ; {
		if resp, err := http.Get(base + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return base
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			t.Fatalf("prometheus not ready in 30 s: %s", b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// promQuery evaluates expr at time at and returns the one value it gives.
func promQuery(t *testing.T, base, expr string, at time.Time) float64 {
	t.Helper()
	q := url.Values{"query": {expr}, "time": {promTime(at)}}
	res := promAPI(t, base, "query", q)
	if len(res) != 1 {
		t.Fatalf("query %s: %d series, want 1: %+v", expr, len(res), res)
	}
	return promValue(t, expr, res[0].Value)
}

// promRange evaluates expr every second from start to end and returns
// the values of the one series it gives.
func promRange(t *testing.T, base, expr string, start, end time.Time) []float64 {
	t.Helper()
	q := url.Values{"query": {expr}, "start": {promTime(start)}, "end": {promTime(end)}, "step": {"1"}}
	res := promAPI(t, base, "query_range", q)
	if len(res) != 1 {
		t.Fatalf("query %s: %d series, want 1: %+v", expr, len(res), res)
	}
	var out []float64
	for _, v := range res[0].Values {
		out = append(out, promValue(t, expr, v))
	}
	return out
}

type promSeries struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
	Values [][2]any          `json:"values"`
}

func promAPI(t *testing.T, base, endpoint string, q url.Values) []promSeries {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/" + endpoint + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []promSeries `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Status != "success" {
		t.Fatalf("%s %s: %v %s", endpoint, q.Get("query"), err, r.Error)
	}
	return r.Data.Result
}

func promTime(at time.Time) string {
	return strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)
}

func promValue(t *testing.T, expr string, v [2]any) float64 {
	t.Helper()
	s, _ := v[1].(string)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("query %s: value %v", expr, v)
	}
	return f
}

// A real Prometheus scrapes a short paced bench (issue 16): every value
// it stored of the window's GET payload counter is whole values and never
// falls, and the last, scraped while the bench lingers after the window,
// is the record's total to the byte. (The counter's rate against the
// record's Gbps was the machine's to say: a process make test froze for
// a second moved that second's bytes into the next.)
func TestPrometheusScrapesTheBenchRate(t *testing.T) {
	t.Parallel()
	srv := labtest.StartRedis(t)
	maddr := fmt.Sprintf("127.0.0.1:%d", labtest.FreePort(t))
	prom := startPrometheus(t, maddr)
	out := filepath.Join(t.TempDir(), "r.json")
	// Paced: each second's bytes are the schedule's, not the machine's,
	// and a queue limit no freeze reaches drops nothing.
	const rate, size = 400, 256 << 10
	cmd := exec.Command(labtest.Binary(t), "bench", "--quiet", "-p", strconv.Itoa(srv.Port), "-c", "2", "-t", "1",
		"-s", "256KiB", "-n", "16", "--prefill", "--rate", strconv.Itoa(rate), "--queue-limit", labtest.PacedQueueLimit.String(), "--warmup", "2s", "-d", "8s",
		"--metrics-listen", maddr, "--metrics-linger", "4s", "--json", out)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bench: %v: %s", err, b)
	}
	if !strings.Contains(string(b), "metrics at http://"+maddr+"/metrics") {
		t.Errorf("bench did not say where its metrics are: %s", b)
	}
	res, err := lab.ReadResult(out)
	if err != nil {
		t.Fatal(err)
	}
	if ol := res.OpenLoop; ol == nil || ol.Dropped > 0 || ol.Offered != rate {
		t.Fatalf("not a paced run at %d/s without drops: %+v", rate, ol)
	}
	total := float64(res.Ops[lab.OpGet].PayloadBytes)
	if res.Window.Start == nil {
		t.Fatalf("the record has no window start: %+v", res.Window)
	}
	got := promRange(t, prom, `sum(linerate_payload_bytes_total{phase="measure",op="GET"})`, *res.Window.Start, time.Now())
	last := 0.0
	for i, v := range got {
		if v < last || v > total || v != float64(int64(v)/size*size) {
			t.Fatalf("stored counter %v (at %d s): want whole %d-byte values, rising, at most the record's %.0f bytes", got, i, size, total)
		}
		last = v
	}
	t.Logf("record %.0f bytes of GET payload; Prometheus stored %v", total, got)
	if total <= 0 || last != total {
		t.Fatalf("Prometheus's last %.0f bytes, the record's %.0f", last, total)
	}
	if v := promQuery(t, prom, `max_over_time(linerate_cell_info{version=~"redis-.+"}[30s])`, res.Ended); v != 1 {
		t.Errorf("cell info %v", v)
	}
}

func TestMetricsListenRefusesBadAddresses(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	bin := labtest.Binary(t)
	// A real run and cell, so the address is the only thing wrong.
	run := filepath.Join(t.TempDir(), "run")
	if out, err := exec.Command("cp", "-r", "../../runs/sample-local", run).CombinedOutput(); err != nil {
		t.Fatalf("copy the sample run: %v: %s", err, out)
	}
	// The bench cases aim at busy too: a refusal that came only after the
	// bench started would leave its connections in busy's queue.
	port := strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)
	for _, args := range [][]string{
		{"bench", "-p", port, "-d", "1s", "--metrics-listen", "nonsense"},
		{"bench", "-p", port, "-d", "1s", "--metrics-listen", busy.Addr().String()},
		{"bench", "-p", port, "-d", "1s", "--metrics-listen", "127.0.0.1:70000"},
		{"agent", "--metrics-listen", "127.0.0.1"},
		{"sweep", "run", "../../sweeps/campaigns/local.yaml", "--metrics-listen", "nonsense"},
		{"soak", run, "--cell", "redis-7.0.15/GET/1MiB/r1", "--metrics-listen", "nonsense"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			cmd := exec.Command(bin, args...)
			out, _ := cmd.CombinedOutput()
			if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), "--metrics-listen") || !strings.Contains(string(out), "want HOST:PORT") {
				t.Fatalf("exit %d: %s", code, out)
			}
			_ = busy.(*net.TCPListener).SetDeadline(time.Now())
			if c, err := busy.Accept(); err == nil {
				c.Close()
				t.Errorf("it connected to the server before refusing the flag")
			}
		})
	}
}

// scrapeText polls url until body contains every want, or 60 s pass.
func scrapeUntil(t *testing.T, url string, done <-chan struct{}, want ...string) string {
	t.Helper()
	var last string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		if resp, err := http.Get(url); err == nil {
			b := new(strings.Builder)
			_, _ = io.Copy(b, resp.Body)
			resp.Body.Close()
			last = b.String()
			all := true
			for _, w := range want {
				all = all && strings.Contains(last, w)
			}
			if all {
				return last
			}
		}
		select {
		case <-done:
			t.Fatalf("the run ended before its metrics showed %q; last scrape:\n%s", want, last)
		default:
		}
	}
	t.Fatalf("metrics never showed %q; last scrape:\n%s", want, last)
	return ""
}

// sweep run serves the cell in flight, its live totals and the server
// this machine runs for it.
func TestSweepRunServesLiveMetrics(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	camp := redisCampaign(t, dir, "m", "1s", "6s")
	maddr := fmt.Sprintf("127.0.0.1:%d", labtest.FreePort(t))
	bg := startBackground(t, "sweep", "run", camp, "--out", filepath.Join(dir, "run"), "--metrics-listen", maddr, "--metrics-linger", "0")
	body := scrapeUntil(t, "http://"+maddr+"/metrics", bg.done,
		`linerate_cell_info{cell="r/GET/256KiB/r1",version="redis-`,
		`linerate_payload_bytes_total{cell="r/GET/256KiB/r1",op="GET",phase="measure"}`,
		`linerate_run_phase{cell="r/GET/256KiB/r1",phase="measure"} 1`,
		`linerate_server_cpu_seconds_total{mode="user",pid=`)
	if !strings.Contains(body, `server="redis-`) {
		t.Errorf("the server's threads are not named by version:\n%s", body)
	}
	bg.finish(t, "sweep run")
}

// soak serves the cell it reruns and its live totals while it runs: a
// local campaign's one short cell is run, then soaked for the shortest
// window soak takes (10 s) with --metrics-listen.
func TestSoakServesLiveMetrics(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	camp := redisCampaign(t, dir, "s", "200ms", benchWindow)
	run := filepath.Join(dir, "run")
	if code, stdout, errs := linerate(t, "", "", "sweep", "run", camp, "--out", run); code != 0 {
		t.Fatalf("sweep run: exit %d\nstdout: %s\nstderr: %s", code, stdout, errs)
	}
	const cell = "r/GET/256KiB/r1"
	maddr := fmt.Sprintf("127.0.0.1:%d", labtest.FreePort(t))
	bg := startBackground(t, "soak", run, "--cell", cell, "--duration", "10s", "--metrics-listen", maddr, "--metrics-linger", "0")
	done := bg.done
	url := "http://" + maddr + "/metrics"
	payload := `linerate_payload_bytes_total{cell="` + cell + `",op="GET",phase="measure"} `
	info := `linerate_cell_info{cell="` + cell + `",version="redis-`
	// The soak's measured window is 10 s: its bytes show within it.
	var body string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		body = scrapeUntil(t, url, done, info, payload)
		if v := metricValue(body, payload); v > 0 {
			t.Logf("soak served %.0f payload bytes measured", v)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the soak's measured payload stayed 0:\n%s", body)
		}
	}
	bg.finish(t, "soak")
}

// redisCampaign writes a local campaign of one 256 KiB GET cell on
// Debian's redis-server (labelled r) and returns its path. Its load is
// paced at 100 requests a second: what the tests read is that figures
// are served, not how fast, and a 10 s soak at full speed would take both
// CPUs from the tests beside it.
func redisCampaign(t *testing.T, dir, name, warmup, duration string) string {
	t.Helper()
	redis := labtest.Need(t, "redis-server")
	camp := filepath.Join(dir, name+".yaml")
	src := fmt.Sprintf(`name: %s
provider: local
versions:
  - {label: r, binary: %s}
workload:
  ratio: GET
  value-size: 256KiB
  connections: 2
  threads: 1
  keyspace: 8
  prefill: true
  rate: 100
  warmup: %s
  duration: %s
`, name, redis, warmup, duration)
	if err := os.WriteFile(camp, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return camp
}

// background is linerate running while the test scrapes it: done closes
// when it exits; the test's end kills it if it still runs.
type background struct {
	cmd  *exec.Cmd
	out  strings.Builder
	done chan struct{}
}

func startBackground(t *testing.T, args ...string) *background {
	t.Helper()
	bg := &background{cmd: exec.Command(labtest.Binary(t), args...), done: make(chan struct{})}
	bg.cmd.Stdout, bg.cmd.Stderr = &bg.out, &bg.out
	if err := bg.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = bg.cmd.Wait(); close(bg.done) }()
	t.Cleanup(func() { _ = bg.cmd.Process.Kill(); <-bg.done })
	return bg
}

// finish waits up to 2 minutes for the command to end and fails unless it
// exited 0.
func (bg *background) finish(t *testing.T, what string) {
	t.Helper()
	select {
	case <-bg.done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s did not end", what)
	}
	if bg.cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("%s: %s", what, bg.out.String())
	}
}

// metricValue is the value on body's line that starts with series (its
// name and labels, then a space); -1 when there is none.
func metricValue(body, series string) float64 {
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, series); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}

// The agent on a server host serves its sampler's figures for the servers
// it runs, and stops serving a server it stopped.
func TestAgentServesHostMetrics(t *testing.T) {
	t.Parallel()
	redis := labtest.Need(t, "redis-server")
	maddr := fmt.Sprintf("127.0.0.1:%d", labtest.FreePort(t))
	cmd := exec.Command(labtest.Binary(t), "agent", "--state-dir", t.TempDir(), "--metrics-listen", maddr)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	read := agentLines(t, stdout)
	read() // hello
	url := "http://" + maddr + "/metrics"
	scrapeUntil(t, url, nil, "linerate_host_sample_ok 1", `linerate_host_network_receive_bytes_total{device="lo"}`)
	fmt.Fprintf(stdin, `{"id":1,"op":"start","plan":{"spec":{"label":"x","binary":%q,"server":{}},"segment":"x"},"bind":"127.0.0.1","log_dir":%q}`+"\n", redis, t.TempDir())
	started, _ := read()["started"].(map[string]any)
	pid, _ := started["pid"].(float64)
	if pid <= 0 {
		t.Fatalf("start answer %v", started)
	}
	pidLabel := fmt.Sprintf(`pid="%d"`, int(pid))
	body := scrapeUntil(t, url, nil, "linerate_server_cpu_seconds_total{", pidLabel, "linerate_server_minor_faults_total{")
	if !strings.Contains(body, `server="redis-`) {
		t.Errorf("server not named by version:\n%s", body)
	}
	fmt.Fprintln(stdin, `{"id":2,"op":"stop","server":1}`)
	if r := read(); r["error"] != nil {
		t.Fatalf("stop: %v", r)
	}
	if body := scrapeUntil(t, url, nil, "linerate_host_sample_ok 1"); strings.Contains(body, pidLabel) {
		t.Errorf("a stopped server is still served:\n%s", body)
	}
}

// agentLines reads an agent's answers, one JSON object a line.
func agentLines(t *testing.T, stdout io.Reader) func() map[string]any {
	lines := bufio.NewScanner(stdout)
	return func() map[string]any {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("agent output ended: %v", lines.Err())
		}
		var m map[string]any
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("agent said %q: %v", lines.Text(), err)
		}
		return m
	}
}

// The endpoint outlives the run (issue 25): bench publishes its final
// totals, says so, and keeps serving them for --metrics-linger, so a
// scrape after the end reads the record's totals exactly (a scraper that
// last came a second before the end would otherwise miss that second for
// good). Ctrl-C ends the wait; the exit code stays the run's.
func TestBenchMetricsOutliveTheRun(t *testing.T) {
	t.Parallel()
	srv := labtest.StartRedis(t)
	maddr := fmt.Sprintf("127.0.0.1:%d", labtest.FreePort(t))
	out := filepath.Join(t.TempDir(), "r.json")
	cmd := exec.Command(labtest.Binary(t), "bench", "--quiet", "-p", strconv.Itoa(srv.Port), "-c", "2", "-t", "1",
		"-s", "64KiB", "-n", "8", "--prefill", "--rate", "100", "-d", benchWindow,
		"--metrics-listen", maddr, "--metrics-linger", "10m", "--json", out)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var said strings.Builder
	go func() {
		defer close(exited)
		_ = cmd.Wait()
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	lines := bufio.NewScanner(stderr)
	lingering := false
	for !lingering && lines.Scan() {
		said.WriteString(lines.Text() + "\n")
		lingering = strings.Contains(lines.Text(), "metrics stay at http://"+maddr+"/metrics for 10m0s")
	}
	if !lingering {
		<-exited
		t.Fatalf("bench ended without keeping its metrics up (exit %d):\n%s", cmd.ProcessState.ExitCode(), said.String())
	}
	// The record is written before the wait begins.
	res, err := lab.ReadResult(out)
	if err != nil {
		t.Fatal(err)
	}
	get := res.Ops[lab.OpGet]
	if get == nil || get.Ops == 0 {
		t.Fatalf("no GETs measured: %+v", res.Ops)
	}
	resp, err := http.Get("http://" + maddr + "/metrics")
	if err != nil {
		t.Fatalf("scrape after the end: %v", err)
	}
	body := new(strings.Builder)
	_, _ = io.Copy(body, resp.Body)
	resp.Body.Close()
	payload := metricValue(body.String(), `linerate_payload_bytes_total{cell="",op="GET",phase="measure"} `)
	ok := metricValue(body.String(), `linerate_requests_total{cell="",op="GET",phase="measure",status="ok"} `)
	if payload != float64(get.PayloadBytes) || ok != float64(get.Ops) {
		t.Errorf("scraped after the end: %.0f payload bytes, %.0f requests; the record: %d, %d\n%s",
			payload, ok, get.PayloadBytes, get.Ops, body)
	}
	if !strings.Contains(body.String(), `linerate_run_phase{cell="",phase="measure"} 0`) {
		t.Errorf("the run is over but a phase is still current:\n%s", body)
	}
	_ = cmd.Process.Signal(os.Interrupt)
	select {
	case <-exited:
	case <-time.After(time.Minute):
		t.Fatal("bench went on waiting after Ctrl-C")
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit %d after Ctrl-C ended the wait, want the run's 0:\n%s", code, said.String())
	}
}
