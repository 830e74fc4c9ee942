package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/netns"
	"github.com/linerate/linerate/infra/sshhost"
	"github.com/linerate/linerate/infra/sshhost/sshtest"
	"github.com/linerate/linerate/lab/hdrfile"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/sweeps"
)

// With PARTS_HELPER=netns-tune the test binary is a coordinator that tunes
// a netns pair and waits to be killed.
func TestMain(m *testing.M) {
	if os.Getenv("PARTS_HELPER") == "netns-tune" {
		os.Exit(netnsTuneHelper())
	}
	// No goroutine of a session (agents, samplers, servers' waiters)
	// outlives its Close.
	goleak.VerifyTestMain(m)
}

// redisBinary is Debian's redis-server, which .ci/setup installs.
func redisBinary(t *testing.T) string {
	t.Helper()
	return labtest.Need(t, "redis-server")
}

// cellWindow is the measured window of the real cells here, and of the
// link calibrations whose figures checkLink requires: runAll requires
// every cell done, and a cell is done (a link figure above 0) only when a
// request completed inside its window; make test was seen to freeze a
// process for 1-2.5 s, which a shorter window can lie wholly inside.
const cellWindow = "3s"

// spec is the campaign the place tests run: two versions, GET and SET, one
// value size (4 cells: a second size only added four 3 s windows), paced
// (what a cell moves is not what these tests judge, and four 3 s windows
// closed loop took both CPUs from every other package for 12 s), and no
// link calibration but where a test checks it (withLink).
func spec(bin string) string {
	return `name: e2e
calibrate: false
versions:
  - {binary: ` + bin + `, label: one-io, io-threads: 1}
  - {binary: ` + bin + `, label: two-io, io-threads: 2}
server:
  maxmemory: 256mb
workload:
  ratio: [GET, SET]
  value-size: 1MiB
  connections: 2
  threads: 1
  keyspace: 4
  rate: 50
  warmup: 100ms
  duration: ` + cellWindow + `
`
}

// withLink is src with the link calibrated before the first cell, in
// windows a frozen process cannot swallow (checkLink requires figures).
func withLink(src string) string {
	return strings.Replace(src, "calibrate: false\n", "calibrate: {duration: "+cellWindow+", warmup: 0s}\n", 1)
}

// open opens c in dir with opt; cleanup closes it (again: Close is safe
// to repeat for what it tears down).
func open(t *testing.T, c *sweeps.Campaign, dir string, opt Options) *Session {
	t.Helper()
	s, err := Open(context.Background(), c, dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// runAll runs every cell of the session's campaign and returns the run;
// every cell must be done.
func runAll(t *testing.T, s *Session) *sweeps.Run {
	t.Helper()
	sum, err := s.Run(context.Background(), RunOptions{SampleEvery: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Failed) != 0 || sum.Done == 0 {
		t.Fatalf("%s", sweeps.SummaryText(sum))
	}
	run, err := sweeps.ReadRun(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// checkHDRFiles: the store keeps a record's HdrHistogram files beside it,
// the interval log too (the per-second histograms reached the record).
func checkHDRFiles(t *testing.T, dir string, rec *sweeps.CellRecord) {
	t.Helper()
	for op := range rec.Result.Ops {
		for _, ext := range []string{hdrfile.HgrmExt, hdrfile.HlogExt} {
			name := strings.TrimSuffix(sweeps.CellFileName(rec.CellID), ".json") + "." + string(op) + ext
			if fi, err := os.Stat(filepath.Join(dir, sweeps.HgrmDir, name)); err != nil || fi.Size() == 0 {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
}

// parse parses a campaign given as text, its provider block checked.
func parse(t *testing.T, file, src string) *sweeps.Campaign {
	t.Helper()
	c, err := sweeps.ParseCampaign(file, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Default().settings(c); err != nil {
		t.Fatal(err)
	}
	return c
}

// profileIn writes a tuning profile as dir/name.yaml.
func profileIn(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// sshConfig reaches h's sshd in the lab as root with the lab's key. The
// lab's hosts upload linerate into one directory (l.BinDir): the first
// host of a session uploads it, the others find it there by its checksum.
func sshConfig(t *testing.T, l *sshtest.Lab, h infra.Host, label, known string) sshhost.Config {
	return sshhost.Config{Label: label, Addr: l.Addr(h), User: "root", Signer: l.ClientKey, KnownHosts: known,
		DataAddr: h.DataAddr(), Dist: labtest.Dist(t), Dial: l.Dial, RemoteDir: l.BinDir}
}

// alive says whether pid is still a process (all namespaces of this test
// share one PID namespace).
func alive(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == nil }

// agentsRunning lists processes running `linerate agent` in the hosts'
// network namespaces: agents of other tests (other packages run at the
// same time) are not this test's to count or kill.
func agentsRunning(t *testing.T, hosts ...infra.Host) []string {
	t.Helper()
	mine := map[string]bool{}
	for _, h := range hosts {
		st, err := os.Stat(filepath.Join(netns.RunDir, netns.Of(h).Namespace))
		if err != nil {
			t.Fatal(err)
		}
		mine[fmt.Sprintf("net:[%d]", st.Sys().(*syscall.Stat_t).Ino)] = true
	}
	var found []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		ns, _ := os.Readlink(filepath.Join("/proc", e.Name(), "ns", "net"))
		if strings.Contains(string(b), "\x00agent\x00--state-dir\x00") && mine[ns] {
			found = append(found, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
}
