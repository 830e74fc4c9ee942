package engine_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/labtest"
)

// While one connection streams 8 MiB GETs from the sink, the Go runtime's
// own threads in the bench stay asleep. The runtime's monitor (sysmon)
// takes back a P whose goroutine has sat in a system call past a 10 ms
// time slice, and each time it does it polls every 20 µs again for a
// while: a bench that lives in read and writev calls woke it thousands of
// times a second on these 2-vCPU VMs, and each wake-up takes a CPU the
// copies need. The raw engine makes its socket calls without telling the
// scheduler (rawsock's RawSyscall), so the monitor keeps its idle tick.
//
// The test counts the wake-ups (voluntary sleeps) of the threads beside
// the one moving bytes, takes off the floor no design avoids — the
// monitor's 10 ms tick and the run's own timers, about 200 a second
// here — and divides the rest by the requests moved. Measured on
// loopback: as built, nothing above the floor (197-199 a second, at 300-
// 500 requests a second); before the fix (commit c68ddd6's parent),
// 3,100-4,200 a second, 6.5-11 wake-ups per request above the floor. The
// bound, 0.5 per request, is 13 times below the least of those, and a
// slower or busier machine, which moves fewer requests, adds nothing
// above the floor (197-198 a second beside another package's tests).
//
// The sink's own wake-ups (its connections on threads of their own
// outside Go's netpoller, up to Server.Threads) move with the machine's
// load, so they are a row of `make bench`, not a test.
func TestGoRuntimeStaysAsleepWhileBytesMove(t *testing.T) {
	const floor, bound = 250, 0.5 // wake-ups a second; per request above the floor
	bin := labtest.Binary(t)
	copies := []string{"LINERATE_NO_MSG_TRUNC=1"} // both copy, as the link calibration does
	sink := labtest.StartSink(t, bin, copies, "-s", "8388608", "-n", "16", "--seed", "1", "--link")
	defer sink.Stop()
	record := filepath.Join(t.TempDir(), "r.json")
	bench := exec.Command(bin, "bench", "-h", "127.0.0.1", "-p", strconv.Itoa(sink.Port), "-c", "1", "-t", "1", "-n", "16", "-s", "8388608",
		"-r", "100:0", "--pipeline", "2", "--warmup", "1s", "-d", "3s", "--verify", "none", "--quiet", "--json", record)
	bench.Env = append(os.Environ(), copies...)
	if err := bench.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- bench.Wait() }()
	time.Sleep(1500 * time.Millisecond)
	wakes, cpu, err := labtest.SideWakeups(bench.Process.Pid, 2*time.Second)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("bench: %v", err)
		}
	case <-time.After(30 * time.Second):
		_ = bench.Process.Kill()
		<-done
		t.Fatal("bench did not end")
	}
	if err != nil {
		t.Fatalf("bench threads: %v", err)
	}
	var r lab.Result
	if data, err := os.ReadFile(record); err != nil || json.Unmarshal(data, &r) != nil || r.Ops[lab.OpGet] == nil {
		t.Fatalf("the bench's record: %v", err)
	}
	perSec := r.Ops[lab.OpGet].OpsPerSec
	if perSec < 5 || cpu < 0.05 {
		t.Fatalf("%.1f GETs a second, busiest thread %.2f CPU seconds: no stream to judge", perSec, cpu)
	}
	perReq := max(wakes-floor, 0) / perSec
	t.Logf("bench: busiest thread %.2f CPU seconds in 2 s; the other threads slept %.0f times a second: %.2f per request above the floor (%.0f requests/s)", cpu, wakes, perReq, perSec)
	if perReq > bound {
		t.Errorf("the threads beside the one moving bytes slept %.0f times a second, %.2f per request above the runtime's floor of %d a second; want at most %.1f", wakes, perReq, floor, bound)
	}
}
