package benchtable

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/labtest"
)

// BenchmarkSinkWakeups: while one flow streams 8 MiB GETs from the sink
// (both ends copying, as the link calibration runs), how often the
// sink's threads beside the one moving bytes go to sleep, per request.
// Each wake-up takes a CPU the copies need. The raw engine's figure is
// the reference: both make their data path's socket calls without
// telling Go's scheduler (lab/engine's
// TestDataPathSocketCallsBypassTheScheduler holds both to it, by the
// execution trace's count of calls, which no load moves). The sink serves
// a connection on a thread of its own outside Go's netpoller
// (lab/sink/thread.go), as the engine does. How often either's other
// threads wake moves with the machine's load (a starved bench's rose from
// 200 to 370 a second while its requests fell to 66 a second), so the
// rates are figures to watch here rather than a test.
func BenchmarkSinkWakeups(b *testing.B) {
	results.guard(b, secWakeups, "sink wake-ups per request")
	bin := labtest.Binary(b)
	const warmup, window = time.Second, 3 * time.Second
	results.where(secWakeups, fmt.Sprintf("loopback: linerate bench GET 8MiB -c 1 -P 2 against linerate sink --link, both copying (LINERATE_NO_MSG_TRUNC=1), %s warmup, %s window; the threads of each process beside its busiest, sampled for 2 s mid-window",
		warmup, window))
	var sink, bench []float64
	var ns []string
	for range rounds {
		s, e, err := wakeupsPerRequest(b, bin, warmup, window)
		sink, bench = append(sink, s), append(bench, e)
		ns = append(ns, errNote(err))
	}
	results.add(secWakeups, compare("sink wake-ups per request beside one GET flow vs the bench's", "wake-ups", "wake-ups", sink, bench, atMost(1), ns...))
}

// wakeupsPerRequest runs one sink and one bench and returns each one's
// side wake-ups per request.
func wakeupsPerRequest(b *testing.B, bin string, warmup, window time.Duration) (sink, bench float64, err error) {
	copies := []string{"LINERATE_NO_MSG_TRUNC=1"}
	s := labtest.StartSink(b, bin, copies, "-s", "8388608", "-n", "16", "--seed", "1", "--link")
	defer s.Stop()
	rec := b.TempDir() + "/r.json"
	cmd := exec.Command(bin, "bench", "-h", "127.0.0.1", "-p", strconv.Itoa(s.Port), "-c", "1", "-t", "1", "-n", "16", "-s", "8388608",
		"-r", "100:0", "--pipeline", "2", "--warmup", warmup.String(), "-d", window.String(), "--verify", "none", "--quiet", "--json", rec)
	cmd.Env = append(os.Environ(), copies...)
	if err := cmd.Start(); err != nil {
		return math.NaN(), math.NaN(), err
	}
	ended := make(chan error, 1)
	go func() { ended <- cmd.Wait() }()
	defer func() { _ = cmd.Process.Kill(); <-ended }()
	time.Sleep(warmup + window/4)
	type side struct{ wakes float64 }
	var sinkSide, benchSide side
	done := make(chan error, 2)
	for _, x := range []struct {
		pid int
		out *side
	}{{s.Cmd.Process.Pid, &sinkSide}, {cmd.Process.Pid, &benchSide}} {
		go func() {
			w, _, err := labtest.SideWakeups(x.pid, 2*time.Second)
			x.out.wakes = w
			done <- err
		}()
	}
	for range 2 {
		if e := <-done; e != nil && err == nil {
			err = e
		}
	}
	select {
	case werr := <-ended:
		ended <- werr // for the deferred wait
		if werr != nil && err == nil {
			err = fmt.Errorf("bench: %v", werr)
		}
	case <-time.After(window + runLimit):
		err = fmt.Errorf("bench did not end")
	}
	if err != nil {
		return math.NaN(), math.NaN(), err
	}
	var r lab.Result
	data, err := os.ReadFile(rec)
	if err == nil {
		err = json.Unmarshal(data, &r)
	}
	if err != nil {
		return math.NaN(), math.NaN(), fmt.Errorf("the bench's record: %w", err)
	}
	g := r.Ops[lab.OpGet]
	if g == nil || g.OpsPerSec <= 0 {
		return math.NaN(), math.NaN(), fmt.Errorf("the bench completed no GET")
	}
	return sinkSide.wakes / g.OpsPerSec, benchSide.wakes / g.OpsPerSec, nil
}
