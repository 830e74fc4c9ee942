package metrics_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/sweeps/hostmetrics"
	"github.com/linerate/linerate/sweeps/metrics"
)

// scrape reads the server's metrics as Prometheus would, checking that
// OpenMetrics is what an OpenMetrics scraper gets.
func scrape(t *testing.T, s *metrics.Server) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequest("GET", s.URL(), nil)
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") || !strings.HasSuffix(strings.TrimSpace(string(b)), "# EOF") {
		t.Fatalf("content type %q, body ends %q", ct, b[max(0, len(b)-20):])
	}
	resp, err = http.Get(s.URL()) // the classic text format, to parse
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// find is the metric of family name whose labels include want.
func find(fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	f := fams[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		return m
	}
	return nil
}

func value(m *dto.Metric) float64 {
	switch {
	case m == nil:
		return -1
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	return -2
}

func listen(t *testing.T, cs ...prometheus.Collector) *metrics.Server {
	t.Helper()
	s, err := metrics.Listen("127.0.0.1:0", cs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func tick() *lab.Live {
	lat := make([]uint64, len(lab.LiveLatencyBounds)+1)
	lat[3], lat[5], lat[len(lat)-1] = 10, 5, 1 // ≤1 ms, ≤5 ms, above 50 s
	return &lab.Live{At: time.Now(), Phase: lab.PhaseMeasure, Server: "valkey-9.1.2", Counts: []lab.LiveCount{
		{Phase: lab.PhasePrefill, Op: lab.OpSet, OK: 16, PayloadBytes: 16 << 20, Latency: make([]uint64, len(lat))},
		{Phase: lab.PhaseMeasure, Op: lab.OpGet, OK: 16, Misses: 2, Errors: map[lab.ErrorKind]uint64{lab.ErrTimeout: 3},
			PayloadBytes: 16 << 20, LatencySum: 60.5, Latency: lat},
	}}
}

func TestLiveExposition(t *testing.T) {
	live := metrics.NewLive()
	s := listen(t, live)
	if m := find(scrape(t, s), "linerate_payload_bytes_total", nil); m != nil {
		t.Fatalf("figures before any tick: %v", m)
	}
	live.SetCell("valkey-9.1.2/GET/1MiB/r1")
	live.Update(tick())
	fams := scrape(t, s)
	cell := map[string]string{"cell": "valkey-9.1.2/GET/1MiB/r1", "phase": "measure", "op": "GET"}
	if v := value(find(fams, "linerate_payload_bytes_total", cell)); v != 16<<20 {
		t.Errorf("payload bytes %v", v)
	}
	for status, want := range map[string]float64{"ok": 16, "miss": 2, "timeout": 3} {
		l := map[string]string{"status": status}
		for k, v := range cell {
			l[k] = v
		}
		if v := value(find(fams, "linerate_requests_total", l)); v != want {
			t.Errorf("requests %s = %v, want %v", status, v, want)
		}
	}
	h := find(fams, "linerate_request_duration_seconds", cell).GetHistogram()
	if h.GetSampleCount() != 16 || h.GetSampleSum() != 60.5 {
		t.Fatalf("histogram %v", h)
	}
	for _, b := range h.Bucket {
		want := uint64(0)
		switch {
		case b.GetUpperBound() > 50:
			want = 16
		case b.GetUpperBound() >= 0.005:
			want = 15
		case b.GetUpperBound() >= 0.001:
			want = 10
		}
		if b.GetCumulativeCount() != want {
			t.Errorf("bucket le=%v holds %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
	if v := value(find(fams, "linerate_cell_info", map[string]string{"version": "valkey-9.1.2", "cell": cell["cell"]})); v != 1 {
		t.Errorf("cell info %v", v)
	}
	if value(find(fams, "linerate_run_phase", map[string]string{"phase": "measure"})) != 1 ||
		value(find(fams, "linerate_run_phase", map[string]string{"phase": "warmup"})) != 0 {
		t.Errorf("phase gauge: %v", fams["linerate_run_phase"])
	}
	// The next cell starts from nothing: no count of the last one under its name.
	live.SetCell("valkey-9.1.2/GET/8MiB/r1")
	fams = scrape(t, s)
	if m := find(fams, "linerate_payload_bytes_total", nil); m != nil {
		t.Errorf("a new cell shows the last one's bytes: %v", m)
	}
	if value(find(fams, "linerate_cell_info", map[string]string{"cell": "valkey-9.1.2/GET/8MiB/r1"})) != 1 {
		t.Errorf("the new cell is not named")
	}
}

// The host figures are this machine's real /proc: this test process
// stands in for the server.
var spin int

func TestHostExposition(t *testing.T) {
	pid := os.Getpid()
	x := 1
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); { // CPU time to see
		x = x*31 + 7
	}
	spin = x
	h := &metrics.Host{FS: hostmetrics.Sampler{}, Servers: func() []metrics.HostServer {
		return []metrics.HostServer{{Name: "self", PID: pid}, {Name: "gone", PID: 1 << 30}}
	}}
	fams := scrape(t, listen(t, h))
	if value(find(fams, "linerate_host_sample_ok", nil)) != 1 {
		t.Fatal("host sample failed")
	}
	if v := value(find(fams, "linerate_host_cpu_seconds_total", map[string]string{"cpu": "0", "mode": "busy"})); v <= 0 {
		t.Errorf("cpu0 busy %v", v)
	}
	if v := value(find(fams, "linerate_host_network_receive_bytes_total", map[string]string{"device": "lo"})); v < 0 {
		t.Errorf("lo rx %v", v)
	}
	var user float64
	for _, m := range fams["linerate_server_cpu_seconds_total"].GetMetric() {
		l := map[string]string{}
		for _, p := range m.Label {
			l[p.GetName()] = p.GetValue()
		}
		if l["server"] == "gone" {
			t.Errorf("a server that is gone is reported: %v", l)
		}
		if l["pid"] == strconv.Itoa(pid) && l["mode"] == "user" {
			user += m.Counter.GetValue()
		}
	}
	if user <= 0 {
		t.Errorf("no user CPU for the server's threads")
	}
	if value(find(fams, "linerate_server_minor_faults_total", map[string]string{"server": "self"})) <= 0 {
		t.Errorf("no minor faults for the server")
	}
}

// Names is what dashboards are checked against: it must be exactly what
// a scrape of both collectors shows.
func TestNamesAreWhatIsExported(t *testing.T) {
	live := metrics.NewLive()
	live.Update(tick())
	fams := scrape(t, listen(t, live, &metrics.Host{FS: hostmetrics.Sampler{},
		Servers: func() []metrics.HostServer { return []metrics.HostServer{{Name: "self", PID: os.Getpid()}} }}))
	seen := map[string]bool{}
	for name, f := range fams {
		if f.GetType() == dto.MetricType_HISTOGRAM {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				seen[name+s] = true
			}
			continue
		}
		seen[name] = true
	}
	listed := map[string]bool{}
	for _, n := range metrics.Names() {
		listed[n] = true
		if !seen[n] {
			t.Errorf("Names lists %s, which is not exported", n)
		}
	}
	for n := range seen {
		if strings.HasPrefix(n, "linerate_") && !listed[n] {
			t.Errorf("%s is exported but not in Names", n)
		}
	}
}

func TestListenRefusesBadAddresses(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, addr := range []string{"nonsense", "127.0.0.1", "127.0.0.1:99999", "127.0.0.1:http", "example.invalid:9100", busy.Addr().String(), "203.0.113.7:9100"} {
		s, err := metrics.Listen(addr, metrics.NewLive())
		var ae *metrics.AddrError
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), "--metrics-listen") {
			if s != nil {
				s.Close()
			}
			t.Errorf("Listen(%q) = %v, want an address error", addr, err)
		}
	}
}

// CloseAfter serves the final totals until the linger ends or the
// context does, then closes; a linger out of bounds is refused.
func TestCloseAfterLingers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		linger time.Duration
		cancel bool
	}{
		{"short linger", time.Millisecond, false},
		{"no linger", 0, false},
		{"Ctrl-C ends a long one", time.Hour, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := metrics.NewLive()
			live.Update(&lab.Live{Final: true, Counts: []lab.LiveCount{{Phase: lab.PhaseMeasure, Op: lab.OpGet, OK: 3, PayloadBytes: 3 << 20}}})
			s, err := metrics.Listen("127.0.0.1:0", live)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			if tc.cancel {
				cancel()
			}
			defer cancel()
			if err := s.CloseAfter(ctx, tc.linger); err != nil {
				t.Fatal(err)
			}
			if resp, err := http.Get(s.URL()); err == nil {
				resp.Body.Close()
				t.Errorf("still served after CloseAfter returned")
			}
		})
	}
	for _, d := range []time.Duration{-time.Second, metrics.MaxLinger + 1} {
		if err := metrics.CheckLinger(d); err == nil || !strings.Contains(err.Error(), "--metrics-linger") {
			t.Errorf("CheckLinger(%s) = %v, want an error naming the flag", d, err)
		}
	}
	if err := metrics.CheckLinger(metrics.DefaultLinger); err != nil {
		t.Errorf("the default linger is refused: %v", err)
	}
}
