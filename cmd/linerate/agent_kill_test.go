package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/netns"
	"github.com/linerate/linerate/lab/labtest"
)

// An agent killed outright (SIGKILL: no cleanup of its own runs) leaves no
// server of its own running: a binary version dies with it (a parent-death
// signal), an image version is removed by the watchdog the agent left for
// it (docker's child, not the agent's: no signal of the agent's reaches
// it). The agent runs in the server namespace of a netns pair, as on a
// lab host; testdata's fake docker plays docker with Debian's redis-server.
func TestAgentKilledLeavesNoServer(t *testing.T) {
	t.Parallel()
	redis := labtest.Need(t, "redis-server")
	out, err := exec.Command(redis, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`v=([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("redis-server --version: %s", out)
	}
	prov := &netns.Provider{}
	pair, err := prov.Up(context.Background(), infra.Spec{Campaign: "agent-kill"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prov.Down(context.Background()) })
	srvHost := netns.Of(pair.Server)
	for _, tc := range []struct{ name, version string }{
		{"binary", fmt.Sprintf(`{"label":"bin","binary":%q,"server":{}}`, redis)},
		{"image", fmt.Sprintf(`{"label":"img","image":"redis:%s","server":{}}`, m[1])},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fake := labtest.FakeDocker(t)
			cmd := srvHost.Command(context.Background(), labtest.Binary(t), "agent", "--state-dir", filepath.Join(dir, "state"), "--docker", fake)
			stdin, _ := cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			read := agentLines(t, stdout)
			read() // hello
			fmt.Fprintf(stdin, `{"id":1,"op":"start","plan":{"spec":%s,"segment":%q},"bind":"198.18.0.1","log_dir":%q}`+"\n", tc.version, tc.name, dir)
			r := read()
			started, _ := r["started"].(map[string]any)
			pid, _ := started["pid"].(float64)
			if pid <= 0 || !labtest.Runs(int(pid)) {
				t.Fatalf("start answer %v", r)
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			if !labtest.GoneWithin(int(pid), labtest.GoneLimit) {
				_ = syscall.Kill(int(pid), syscall.SIGKILL)
				t.Errorf("the %s server (pid %d) outlived its SIGKILLed agent", tc.name, int(pid))
			}
		})
	}
}
