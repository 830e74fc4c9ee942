package hdrfile_test

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/engine"
	"github.com/linerate/linerate/lab/hdrfile"
	"github.com/linerate/linerate/lab/labtest"
)

// hgrmRow is one row of a .hgrm table.
type hgrmRow struct {
	value   float64 // ms
	pct     float64 // 0-1
	count   int64
	inverse string // the 1/(1-Percentile) column; "inf" on the 100% row
}

type hgrm struct {
	rows                       []hgrmRow
	mean, stddev, max          float64
	total, buckets, subBuckets int64
}

var (
	hgrmHeader  = " Value\tPercentile\tTotalCount\t1/(1-Percentile)"
	hgrmRowRe   = regexp.MustCompile(`^ *(\d+\.\d{3}) +(\d\.\d{6}) +(\d+) +(\d+\.\d{2}|inf)$`)
	hgrmMeanRe  = regexp.MustCompile(`^#\[Mean    = +(\d+\.\d{3}), StdDeviation   = +(\d+\.\d{3})\]$`)
	hgrmMaxRe   = regexp.MustCompile(`^#\[Max     = +(\d+\.\d{3}), Total count    = +(\d+)\]$`)
	hgrmBucketR = regexp.MustCompile(`^#\[Buckets = +(\d+), SubBuckets     = +(\d+)\]$`)
)

// parseHgrm reads HdrHistogram's percentile distribution text strictly, as
// hdrhistogram-go's PercentilesPrint prints it.
func parseHgrm(t *testing.T, text string) hgrm {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) < 6 || lines[0] != hgrmHeader || lines[1] != "" {
		t.Fatalf("hgrm header:\n%s", text)
	}
	var h hgrm
	for _, l := range lines[2 : len(lines)-3] {
		m := hgrmRowRe.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("hgrm row %q", l)
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		p, _ := strconv.ParseFloat(m[2], 64)
		n, _ := strconv.ParseInt(m[3], 10, 64)
		h.rows = append(h.rows, hgrmRow{v, p, n, m[4]})
	}
	foot := lines[len(lines)-3:]
	m1, m2, m3 := hgrmMeanRe.FindStringSubmatch(foot[0]), hgrmMaxRe.FindStringSubmatch(foot[1]), hgrmBucketR.FindStringSubmatch(foot[2])
	if m1 == nil || m2 == nil || m3 == nil {
		t.Fatalf("hgrm footer:\n%s", strings.Join(foot, "\n"))
	}
	h.mean, _ = strconv.ParseFloat(m1[1], 64)
	h.stddev, _ = strconv.ParseFloat(m1[2], 64)
	h.max, _ = strconv.ParseFloat(m2[1], 64)
	h.total, _ = strconv.ParseInt(m2[2], 10, 64)
	h.buckets, _ = strconv.ParseInt(m3[1], 10, 64)
	h.subBuckets, _ = strconv.ParseInt(m3[2], 10, 64)
	return h
}

// rankValue is the value (ms) at percentile q as the table shows it: the
// row where the cumulative count first reaches q's rank (HDR's rule:
// q/100·N rounded, at least 1), and the row before, which must be below.
func (h hgrm) bracket(q float64) (lo, hi float64) {
	rank := max(int64(q/100*float64(h.total)+0.5), 1)
	lo = math.Inf(-1)
	for _, r := range h.rows {
		if r.count >= rank {
			return lo, r.value
		}
		lo = r.value
	}
	return lo, math.Inf(1)
}

// A real run's files read back: the .hgrm's percentiles are the record's
// summaries, and the interval log's per-second counts are the series.
func TestHDRFilesRoundTrip(t *testing.T) {
	srv := labtest.StartRedis(t)
	w := lab.Workload{Host: "127.0.0.1", Port: srv.Port, Connections: 4, Threads: 2, Keyspace: 16, ValueSz: lab.OneSize(256 << 10),
		Warmup: lab.Duration(200 * time.Millisecond), Duration: lab.Duration(2 * time.Second), Seed: 7,
		Ratio: lab.Ratio{Gets: 50, Sets: 50}, Prefill: true}
	res, err := engine.Run(context.Background(), w, engine.Options{})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if res.Window.Start == nil {
		t.Fatal("the record has no window start")
	}
	files, err := hdrfile.Files(res)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string][]byte{}
	var names []string
	for _, f := range files {
		byName[f.Name] = f.Data
		names = append(names, f.Name)
	}
	if got := strings.Join(names, " "); got != "GET.hgrm GET.hlog SET.hgrm SET.hlog" {
		t.Fatalf("files %s", got)
	}
	for _, op := range []lab.Op{lab.OpGet, lab.OpSet} {
		o := res.Ops[op]
		if o.Latency.Count < 20 {
			t.Fatalf("%s: only %d requests", op, o.Latency.Count)
		}
		t.Run(string(op)+" hgrm", func(t *testing.T) { checkHgrm(t, o.Latency, string(byName[string(op)+".hgrm"])) })
		t.Run(string(op)+" hlog", func(t *testing.T) { checkHlog(t, res, op, string(byName[string(op)+".hlog"])) })
	}
}

func checkHgrm(t *testing.T, s lab.LatencySummary, text string) {
	h := parseHgrm(t, text)
	ms := func(us float64) float64 { return us / 1000 }
	if h.total != s.Count {
		t.Errorf("total count %d, record %d", h.total, s.Count)
	}
	if h.max != ms(s.Max) {
		t.Errorf("max %.3f ms, record %.0f us", h.max, s.Max)
	}
	if math.Abs(h.mean*1000-s.Mean) > 0.55 { // the file prints whole µs, the record tenths
		t.Errorf("mean %.3f ms, record %.1f us", h.mean, s.Mean)
	}
	last := h.rows[len(h.rows)-1]
	if last.pct != 1 || last.count != s.Count || last.value != ms(s.Max) || last.inverse != "inf" {
		t.Errorf("last row %+v: want 100%% at the max with every count and no 1/(1-p)", last)
	}
	for i := 1; i < len(h.rows); i++ {
		a, b := h.rows[i-1], h.rows[i]
		if b.value < a.value || b.pct < a.pct || b.count < a.count {
			t.Fatalf("rows %d-%d not increasing: %+v %+v", i-1, i, a, b)
		}
	}
	// The 50% row is the record's p50 exactly; every summary percentile
	// lies between the row where its rank is reached and the one before.
	for _, r := range h.rows {
		if r.pct == 0.5 && r.value != ms(s.P50) {
			t.Errorf("50%% row %.3f ms, record p50 %.0f us", r.value, s.P50)
		}
	}
	for _, c := range []struct {
		q  float64
		us float64
	}{{50, s.P50}, {90, s.P90}, {99, s.P99}, {99.9, s.P999}, {100, s.Max}} {
		lo, hi := h.bracket(c.q)
		if v := ms(c.us); !(v > lo && v <= hi) {
			t.Errorf("p%g: record %.3f ms, table puts it in (%.3f, %.3f]", c.q, v, lo, hi)
		}
	}
}

var (
	startRe    = regexp.MustCompile(`^#\[StartTime: (\d+) \(seconds since epoch\), (.+)\]$`)
	baseRe     = regexp.MustCompile(`^#\[BaseTime: (\d+) \(seconds since epoch\)\]$`)
	intervalRe = regexp.MustCompile(`^Tag=([^, ]+),(\d+\.\d{6}),(\d+\.\d{6}),(\d+\.\d{6}),([A-Za-z0-9+/]+=*)$`)
	legend     = `"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"`
)

func checkHlog(t *testing.T, res *lab.Result, op lab.Op, text string) {
	o := res.Ops[op]
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	var sawStart, sawBase, sawLegend, sawVersion bool
	var intervals []string
	for _, l := range lines {
		switch {
		case startRe.MatchString(l):
			m := startRe.FindStringSubmatch(l)
			sawStart = true
			if want := fmt.Sprint(res.Window.Start.Unix()); m[1] != want {
				t.Errorf("StartTime %s, window start %s", m[1], want)
			}
			if _, err := time.Parse(time.RFC3339, m[2]); err != nil {
				t.Errorf("StartTime's date %q is not RFC 3339: %v", m[2], err)
			}
		case baseRe.MatchString(l):
			sawBase = true
		case l == "#[Histogram log format version 1.3]":
			sawVersion = true
		case strings.HasPrefix(l, "#"):
		case l == legend:
			sawLegend = true
		default:
			if !sawLegend {
				t.Errorf("interval line before the legend: %q", l)
			}
			intervals = append(intervals, l)
		}
	}
	if !sawStart || !sawBase || !sawLegend || !sawVersion {
		t.Fatalf("header lines missing (start %v base %v legend %v version %v):\n%s", sawStart, sawBase, sawLegend, sawVersion, text)
	}
	if len(intervals) != len(o.Series) {
		t.Fatalf("%d intervals for %d seconds", len(intervals), len(o.Series))
	}
	var total int64
	for i, l := range intervals {
		m := intervalRe.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("interval line %q", l)
		}
		s := o.Series[i]
		if m[1] != string(op) || m[2] != fmt.Sprintf("%d.000000", s.Second) {
			t.Errorf("line %d: tag %s start %s for second %d", i, m[1], m[2], s.Second)
		}
		length, _ := strconv.ParseFloat(m[3], 64)
		if want := min(res.Window.Measured.D()-time.Duration(s.Second)*time.Second, time.Second).Seconds(); math.Abs(length-want) > 0.0005 {
			t.Errorf("second %d: length %s, want %.3f", s.Second, m[3], want)
		}
		d := decodeV2(t, m[5])
		if d.count != int64(s.Ops) {
			t.Errorf("second %d: histogram holds %d latencies, series %d ops", s.Second, d.count, s.Ops)
		}
		if d.sigFigs != 3 || d.lowest != 1 || d.highest != 3600*1000*1000 {
			t.Errorf("second %d: geometry sf %d [%d, %d]", s.Second, d.sigFigs, d.lowest, d.highest)
		}
		total += d.count
		h, err := hdr.Decode([]byte(m[5]))
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%f", float64(h.Max())/1e6); got != m[4] {
			t.Errorf("second %d: interval max %s, histogram max %s s", s.Second, m[4], got)
		}
		// The same buckets give the series' p99: within HDR's 0.1%.
		if p := float64(h.ValueAtQuantile(99)); s.Ops > 0 && math.Abs(p-s.P99) > s.P99*0.001+1 {
			t.Errorf("second %d: histogram p99 %.0f us, series %.0f us", s.Second, p, s.P99)
		}
	}
	if total != o.Latency.Count {
		t.Errorf("interval log holds %d latencies, the window %d", total, o.Latency.Count)
	}
	// HdrHistogram's Go log reader reads the same intervals, and their sum
	// has the window's p99 within the per-second precision.
	r := hdr.NewHistogramLogReader(strings.NewReader(text))
	sum := hdr.New(1, 3600*1000*1000, 3)
	n := 0
	for {
		h, err := r.NextIntervalHistogram()
		if err != nil {
			t.Fatal(err)
		}
		if h == nil {
			break
		}
		n++
		sum.Merge(h)
	}
	if n != len(intervals) || sum.TotalCount() != o.Latency.Count {
		t.Errorf("HdrHistogram's reader: %d intervals, %d latencies", n, sum.TotalCount())
	}
	if p := float64(sum.ValueAtQuantile(99)); math.Abs(p-o.Latency.P99) > o.Latency.P99*(lab.SecondHistogramError+0.002) {
		t.Errorf("merged per-second p99 %.0f us, window p99 %.0f us", p, o.Latency.P99)
	}
}

// v2 is what the test's own decoder reads of a compressed histogram.
type v2 struct {
	sigFigs         int32
	lowest, highest int64
	count           int64
}

// decodeV2 decodes HdrHistogram's V2 compressed encoding from the format's
// description, not from a library: base64; cookie 0x1c849314 (V2
// compressed, 0x10 word-size bits) and the zlib stream's length; in it the
// V2 cookie 0x1c849313, payload length, normalizing offset, significant
// figures, lowest and highest trackable values, the integer-to-double ratio,
// then counts as ZigZag LEB128 (a negative number is a run of zeros).
func decodeV2(t *testing.T, b64 string) v2 {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(raw) < 8 {
		t.Fatalf("base64: %v", err)
	}
	if c := binary.BigEndian.Uint32(raw); c != 0x1c849314 {
		t.Fatalf("compressed cookie %#x", c)
	}
	n := binary.BigEndian.Uint32(raw[4:])
	zr, err := zlib.NewReader(bytes.NewReader(raw[8 : 8+n]))
	if err != nil {
		t.Fatalf("zlib: %v", err)
	}
	body, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("inflate: %v", err)
	}
	if c := binary.BigEndian.Uint32(body); c != 0x1c849313 {
		t.Fatalf("V2 cookie %#x", c)
	}
	payload := int(binary.BigEndian.Uint32(body[4:]))
	d := v2{sigFigs: int32(binary.BigEndian.Uint32(body[12:])),
		lowest: int64(binary.BigEndian.Uint64(body[16:])), highest: int64(binary.BigEndian.Uint64(body[24:]))}
	if ratio := math.Float64frombits(binary.BigEndian.Uint64(body[32:])); ratio != 1 {
		t.Fatalf("conversion ratio %g", ratio)
	}
	counts := bufio.NewReader(bytes.NewReader(body[40 : 40+payload]))
	for {
		u, err := binary.ReadUvarint(counts)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("counts: %v", err)
		}
		if v := int64(u>>1) ^ -int64(u&1); v > 0 { // zigzag
			d.count += v
		}
	}
	return d
}
