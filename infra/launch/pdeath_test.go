package launch

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/lab/labtest"
)

// The main goroutine keeps the main thread: a goroutine that ends locked
// on the main thread does not end the thread (Go wedges it instead), so a
// test goroutine must never run there for the thread-end case to be real.
func init() { runtime.LockOSThread() }

// A server gets SIGKILL when the thread that forked it ends. The goroutine
// that calls Start may end locked to its thread (Go then ends the thread,
// as netns.Host.Do does with a thread it cannot bring back): the server
// must live on, pinned or not.
func TestLocalSurvivesTheThreadThatStartedIt(t *testing.T) {
	bin := systemRedis(t)
	for _, cpus := range []string{"", lastCPU()} {
		t.Run("cpus="+cpus, func(t *testing.T) {
			type started struct {
				srv infra.Server
				err error
			}
			ch := make(chan started, 1)
			go func() {
				runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
				srv, err := (&Local{Binary: bin}).Start(context.Background(), infra.ServerSettings{Kind: infra.Redis, CPUs: cpus, LogDir: t.TempDir()})
				ch <- started{srv, err}
			}()
			st := <-ch
			if st.err != nil {
				t.Fatal(st.err)
			}
			defer st.srv.Stop(context.Background())
			endIdleThreads()
			select {
			case e := <-st.srv.Exited():
				t.Fatalf("the server ended with the thread of the goroutine that started it: %s", e)
			case <-time.After(time.Second):
			}
			if !labtest.Runs(st.srv.Facts().PID) {
				t.Fatalf("server %d is gone", st.srv.Facts().PID)
			}
		})
	}
}

// endIdleThreads makes Go end the OS threads it keeps idle: goroutines
// lock all of them at once (each blocked one holds its own thread) and
// end locked. A server forked from a thread returned to the pool would get
// its parent-death signal here.
// The caller's own thread goes too: it waits meanwhile, so its thread is
// idle, and the goroutine that does the work ends its own.
func endIdleThreads() {
	var ended sync.WaitGroup
	ended.Add(1)
	go func() {
		defer ended.Done()
		runtime.LockOSThread()
		release := make(chan struct{})
		var locked sync.WaitGroup
		for i := 0; i < 32; i++ {
			locked.Add(1)
			ended.Add(1)
			go func() {
				defer ended.Done()
				runtime.LockOSThread()
				locked.Done()
				<-release
			}()
		}
		locked.Wait()
		close(release)
	}()
	ended.Wait()
}

// A runner killed outright (SIGKILL: no teardown runs) takes its servers
// with it: they were started with a parent-death signal.
func TestLocalServerDiesWithItsRunner(t *testing.T) {
	bin := systemRedis(t)
	for _, cpus := range []string{"", lastCPU()} {
		t.Run("cpus="+cpus, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "LAUNCH_HELPER=serve", "LAUNCH_BIN="+bin, "LAUNCH_CPUS="+cpus, "LAUNCH_DIR="+t.TempDir())
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			line, err := bufio.NewReader(out).ReadString('\n')
			pid, perr := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "pid ")))
			if err != nil || perr != nil || !labtest.Runs(pid) {
				t.Fatalf("runner said %q (%v)", line, err)
			}
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
			if !labtest.GoneWithin(pid, labtest.GoneLimit) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("server %d outlived its SIGKILLed runner", pid)
			}
		})
	}
}
