package engine_test

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/linerate/linerate/lab/labtest"
)

// While one connection streams 8 MiB GETs between the sink and the bench,
// the Go runtime's own threads in either process stay mostly asleep. The
// runtime's monitor (sysmon) takes back a P whose goroutine has sat in a
// system call past a 10 ms time slice, and each time it does it polls
// every 20 µs again for a while: a process that lives in read and writev
// calls woke it 3,000-5,000 times a second on these 2-vCPU VMs, and each
// wake-up takes a CPU the copies need (one flow on the netns veth moved
// 11-21 Gbit/s with it, 14-24 without, alternating runs). The bench makes
// its socket calls without telling the scheduler; the sink yields every
// 2 ms so its time slice never runs out. Either one undone breaks this.
func TestGoRuntimeStaysAsleepWhileBytesMove(t *testing.T) {
	bin := labtest.Binary(t)
	// The sink's figure moves with the machine's load (its goroutine parks
	// in the netpoller when the socket is full, more often on busy CPUs:
	// 2,781 once beside the other packages' tests), so this test runs
	// alone and gets three tries, as the open-loop timing tests do.
	upToThreeTries(t, func() []string { return quietTry(t, bin) })
}

// quietTry streams GETs between a sink and a bench for 4 s and samples
// both processes' threads over 2 s in the middle.
func quietTry(t *testing.T, bin string) []string {
	copies := []string{"LINERATE_NO_MSG_TRUNC=1"} // both copy, as the link calibration does
	sink := labtest.StartSink(t, bin, copies, "-s", "8388608", "-n", "16", "--seed", "1", "--link")
	defer sink.Stop()
	bench := exec.Command(bin, "bench", "-h", "127.0.0.1", "-p", strconv.Itoa(sink.Port), "-c", "1", "-t", "1", "-n", "16", "-s", "8388608",
		"-r", "100:0", "--pipeline", "2", "--warmup", "1s", "-d", "3s", "--verify", "none", "--quiet")
	bench.Env = append(os.Environ(), copies...)
	if err := bench.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- bench.Wait() }()
	time.Sleep(1500 * time.Millisecond)
	type side struct {
		name       string
		pid        int
		wakes, cpu float64
		err        error
	}
	sides := []*side{{name: "sink", pid: sink.Cmd.Process.Pid}, {name: "bench", pid: bench.Process.Pid}}
	measured := make(chan struct{})
	for _, s := range sides {
		go func() { s.wakes, s.cpu, s.err = labtest.SideWakeups(s.pid, 2*time.Second); measured <- struct{}{} }()
	}
	<-measured
	<-measured
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("bench: %v", err)
		}
	case <-time.After(30 * time.Second):
		_ = bench.Process.Kill()
		t.Fatal("bench did not end")
	}
	var problems []string
	for _, s := range sides {
		if s.err != nil {
			t.Fatalf("%s threads: %v", s.name, s.err)
		}
		t.Logf("%s: busiest thread %.2f CPU seconds in 2 s, the other threads slept %.0f times a second", s.name, s.cpu, s.wakes)
		if s.cpu < 0.2 {
			problems = append(problems, fmt.Sprintf("%s: its busiest thread used %.2f CPU seconds of 2: no stream to judge", s.name, s.cpu))
		}
		// Measured on loopback, run alone: 3,570-4,060 before (either
		// side); after, the sink 760-1,060, the bench 200.
		if s.wakes > 2000 {
			problems = append(problems, fmt.Sprintf("%s: the threads beside the one moving bytes slept %.0f times a second; want at most 2000", s.name, s.wakes))
		}
	}
	return problems
}
