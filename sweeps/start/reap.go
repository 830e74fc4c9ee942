package start

import (
	"context"
	"fmt"
	"strconv"
	"syscall"
	"time"

	"github.com/linerate/linerate/infra/kernel"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/control"
	"github.com/linerate/linerate/sweeps"
)

// ReapOrphans stops servers a killed runner left behind on this host.
// Local servers die with their runner (a parent-death signal), so this is
// for what that cannot cover: a record from an older linerate, a server
// that outlived it some other way. A server is killed only when the
// recorded PID is still the process that was started, by its executable
// and its start time as recorded at the start (env.json is world-readable:
// a listener on the recorded port can echo its run_id and PID, and a PID
// is reused), and when it still answers on its recorded local port with
// the recorded run_id. A record without that identity is left alone.
// Call it with the run directory's lock held.
func ReapOrphans(ctx context.Context, run *sweeps.Run) []string {
	if run == nil || run.Env == nil {
		return nil
	}
	var reaped []string
	for _, s := range run.Env.Servers {
		port, err1 := strconv.Atoi(s.Info["tcp_port"])
		pid, err2 := strconv.Atoi(s.Info["process_id"])
		start, err3 := strconv.ParseUint(s.Info[infoStartTicks], 10, 64)
		runID, exe := s.Info["run_id"], s.Info[infoExe]
		if err1 != nil || err2 != nil || err3 != nil || port <= 0 || pid <= 1 || runID == "" || exe == "" {
			continue
		}
		if id, err := (kernel.FS{}).Identity(pid); err != nil || id != (kernel.Identity{Exe: exe, StartTicks: start}) {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		ctl, err := control.Dial(cctx, lab.Workload{Host: "127.0.0.1", Port: port})
		if err != nil {
			cancel()
			continue
		}
		info, err := ctl.Info(cctx, "server")
		ctl.Close()
		cancel()
		if err != nil || info["run_id"] != runID || info["process_id"] != strconv.Itoa(pid) {
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
			reaped = append(reaped, fmt.Sprintf("%s (pid %d, port %d)", s.Segment, pid, port))
		}
	}
	return reaped
}
