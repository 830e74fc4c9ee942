package start

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/sweeps"
)

// impostor listens on loopback and answers every command as a server
// would, with an INFO that says whatever run_id and process_id it is told:
// anyone can read them from the world-readable env.json.
func impostor(t *testing.T, runID string, pid int) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	info := fmt.Sprintf("# Server\r\nredis_version:7.0.15\r\nrun_id:%s\r\nprocess_id:%d\r\n", runID, pid)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					// One RESP array of bulk strings per command.
					head, err := r.ReadString('\n')
					if err != nil || !strings.HasPrefix(head, "*") {
						return
					}
					n, _ := strconv.Atoi(strings.TrimSpace(head[1:]))
					var args []string
					for i := 0; i < n; i++ {
						size, err := r.ReadString('\n')
						if err != nil {
							return
						}
						l, _ := strconv.Atoi(strings.TrimSpace(size[1:]))
						b := make([]byte, l+2)
						if _, err := io.ReadFull(r, b); err != nil {
							return
						}
						args = append(args, string(b[:l]))
					}
					reply := "+OK\r\n"
					if len(args) > 0 && strings.EqualFold(args[0], "INFO") {
						reply = fmt.Sprintf("$%d\r\n%s\r\n", len(info), info)
					}
					if _, err := io.WriteString(c, reply); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// ReapOrphans kills only the process it started: the recorded PID must
// still be the recorded executable, started at the recorded time. A
// listener on the recorded port that echoes the recorded run_id and PID
// proves nothing (the PID may be reused, the port taken, the record read
// by anyone).
func TestReapOrphansChecksTheProcessIdentity(t *testing.T) {
	bin := redisBinary(t)
	ctx := context.Background()
	// A real server left running, as a runner that could not stop it
	// leaves one: its record is what the starter wrote.
	st := &Starter{}
	pv := sweeps.PlanVersion{Spec: sweeps.VersionSpec{Binary: bin, Label: "orphan"}, Segment: "orphan"}
	orphan, err := st.Start(ctx, pv, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer orphan.Stop(ctx)
	real, err := orphan.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	realPID := orphan.PID()

	for _, tc := range []struct {
		name string
		info func(victim int) map[string]string // the record; victim is a bystander's PID
		reap bool
	}{
		{"the recorded PID is another process", func(victim int) map[string]string {
			m := copyInfo(real)
			m["process_id"] = strconv.Itoa(victim)
			m["tcp_port"] = strconv.Itoa(impostor(t, m["run_id"], victim))
			return m
		}, false},
		{"a record without the process identity", func(victim int) map[string]string {
			m := map[string]string{"run_id": "0123456789abcdef", "process_id": strconv.Itoa(victim)}
			m["tcp_port"] = strconv.Itoa(impostor(t, m["run_id"], victim))
			return m
		}, false},
		{"the server itself", func(int) map[string]string { return copyInfo(real) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sleep := exec.Command("sleep", "60")
			if err := sleep.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = sleep.Process.Kill(); _ = sleep.Wait() }()
			info := tc.info(sleep.Process.Pid)
			target, _ := strconv.Atoi(info["process_id"])
			run := &sweeps.Run{Env: &sweeps.Environment{Servers: []sweeps.ServerFacts{{Segment: "orphan", Info: info}}}}
			reaped := ReapOrphans(ctx, run)
			if got := len(reaped) == 1; got != tc.reap {
				t.Errorf("reaped %v, want reaped=%v", reaped, tc.reap)
			}
			if !tc.reap {
				time.Sleep(100 * time.Millisecond)
				if !labtest.Runs(target) {
					t.Errorf("pid %d (not the server) was killed", target)
				}
				return
			}
			if !labtest.GoneWithin(realPID, labtest.GoneLimit) {
				t.Errorf("the orphan server %d still runs", realPID)
			}
		})
	}
}

func copyInfo(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
