package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/lab/labtest"
)

// The coordinator vanishes while a request is in flight, so the agent's
// answer meets a closed pipe. That must not kill the agent before its
// cleanup: the server it started is stopped all the same.
func TestAgentCleansUpWhenItsOutputIsClosed(t *testing.T) {
	t.Parallel()
	redis, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server missing (.ci/setup installs it): %v", err)
	}
	cmd := exec.Command(labtest.Binary(t), "agent", "--state-dir", t.TempDir())
	var stderr syncBuffer // what the agent says, and its stacks if it hangs
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second // a server it started may hold its stderr
	stdin, _ := cmd.StdinPipe()
	// The test keeps the write end too: it tells when the pipe has no
	// reader left (below).
	stdout, agentOut, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer agentOut.Close()
	cmd.Stdout = agentOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	read := agentLines(t, stdout)
	read() // hello
	fmt.Fprintf(stdin, `{"id":1,"op":"start","plan":{"spec":{"label":"x","binary":%q,"server":{}},"segment":"x"},"bind":"127.0.0.1","log_dir":%q}`+"\n", redis, t.TempDir())
	started, _ := read()["started"].(map[string]any)
	pid, _ := started["pid"].(float64)
	if pid <= 0 || syscall.Kill(int(pid), 0) != nil {
		t.Fatalf("start answer %v", started)
	}
	stdout.Close() // the coordinator is gone: the next answer hits a closed pipe
	untilNoReader(t, agentOut)
	fmt.Fprintln(stdin, `{"id":2,"op":"snapshot","server":1}`)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Errorf("the agent was killed by %v instead of cleaning up", ws.Signal())
		}
	case <-time.After(30 * time.Second):
		// Its goroutines' stacks, to tell where it waits.
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
		t.Fatalf("the agent did not end after its output closed; it said:\n%s", stderr.String())
	}
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(int(pid), 0) == nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if syscall.Kill(int(pid), 0) == nil {
		syscall.Kill(int(pid), syscall.SIGKILL)
		t.Errorf("server pid %s outlived its agent", strconv.Itoa(int(pid)))
	}
}

// untilNoReader waits (bounded) until the pipe of write end w has no
// reader. Closing this process's read end is not enough: tests running
// beside this one start processes, and a child between its fork and its
// exec holds a copy of every descriptor (close-on-exec ones are closed
// only by the exec, after the forking parent has gone on). While such a
// copy lives, the agent's next answer is written, not refused, and the
// agent rightly waits on its input. A pipe without readers polls POLLERR
// at its write end.
func untilNoReader(t *testing.T, w *os.File) {
	t.Helper()
	fds := []unix.PollFd{{Fd: int32(w.Fd()), Events: unix.POLLOUT}}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := unix.Poll(fds, 0); err == nil && fds[0].Revents&unix.POLLERR != 0 {
			return
		}
	}
	t.Fatal("the agent's output pipe still has a reader a minute after the test closed its own")
}

// syncBuffer is a bytes.Buffer a child's output copier and the test may
// both touch.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
