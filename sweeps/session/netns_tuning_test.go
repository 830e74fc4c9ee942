package session

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/linerate/linerate/infra/netns"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/hostbench"
)

// netnsPair is the namespaces of s's netns pair: its server host's and
// its first client host's (each test's own, so tests may run side by side).
func netnsPair(t *testing.T, s *Session) (srv, cli string) {
	t.Helper()
	if s.place == nil || s.place.link == nil {
		t.Fatal("the session placed no pair")
	}
	sh := netns.Of(s.place.link.Server)
	hb, ok := s.place.link.One.(hostbench.HostBencher)
	if sh == nil || !ok {
		t.Fatalf("not a netns pair: %T, %T", s.place.link.Server, s.place.link.One)
	}
	ch := netns.Of(hb.Host)
	if ch == nil || sh.Namespace == "" || ch.Namespace == "" {
		t.Fatalf("not a netns pair: %T", hb.Host)
	}
	return sh.Namespace, ch.Namespace
}

// readSysctl reads a sysctl in a namespace ("" for this one).
func readSysctl(t *testing.T, ns, name string) string {
	t.Helper()
	argv := []string{"cat", "/proc/sys/" + strings.ReplaceAll(name, ".", "/")}
	if ns != "" {
		argv = append([]string{"ip", "netns", "exec", ns}, argv...)
	}
	out, err := exec.Command(argv[0], argv[1:]...).Output()
	if err != nil {
		t.Fatalf("read %s in %q: %v", name, ns, err)
	}
	return strings.TrimSpace(string(out))
}

// kernelKnobs are two kernel-wide settings a netns test tunes and must
// see restored: vm.swappiness, and net.core.rmem_max (per namespace on
// some kernels, kernel-wide on others; the namespace's own answer, test
// -w, says which). The values are put back when the test ends, whatever
// happened.
type kernelKnobs struct{ swappiness, rmem, swappinessTuned, rmemTuned string }

func newKernelKnobs(t *testing.T) kernelKnobs {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("network namespaces need root; CI runs as root")
		}
		t.Skip("network namespaces need root")
	}
	k := kernelKnobs{swappiness: readSysctl(t, "", "vm.swappiness"), rmem: readSysctl(t, "", "net.core.rmem_max")}
	n, err1 := strconv.Atoi(k.swappiness)
	r, err2 := strconv.Atoi(k.rmem)
	if err1 != nil || err2 != nil {
		t.Fatalf("vm.swappiness %q, net.core.rmem_max %q", k.swappiness, k.rmem)
	}
	k.swappinessTuned, k.rmemTuned = strconv.Itoa((n+7)%100), strconv.Itoa(r+4096)
	t.Cleanup(func() {
		for file, v := range map[string]string{"/proc/sys/vm/swappiness": k.swappiness, "/proc/sys/net/core/rmem_max": k.rmem} {
			if b, _ := os.ReadFile(file); strings.TrimSpace(string(b)) != v {
				_ = os.WriteFile(file, []byte(v), 0o644)
			}
		}
	})
	return k
}

// profile tunes both knobs and a per-namespace sysctl (somaxconn 1919).
func (k kernelKnobs) profile() []byte {
	return []byte("nic_address: 198.18.0.1\nirqbalance: leave\nsysctls: {vm.swappiness: \"" + k.swappinessTuned +
		"\", net.core.somaxconn: \"1919\", net.core.rmem_max: \"" + k.rmemTuned + "\"}\n")
}

// checkTuned checks the machine and both namespaces while the profile holds.
func (k kernelKnobs) checkTuned(t *testing.T, s *Session, rootSomaxconn string) {
	t.Helper()
	srv, cli := netnsPair(t, s)
	for _, ns := range []string{srv, cli} {
		if got := readSysctl(t, ns, "net.core.somaxconn"); got != "1919" {
			t.Errorf("somaxconn in %s: %s, want 1919", ns, got)
		}
		if got := readSysctl(t, ns, "net.core.rmem_max"); got != k.rmemTuned {
			t.Errorf("rmem_max seen in %s: %s, want %s", ns, got, k.rmemTuned)
		}
	}
	if got := readSysctl(t, "", "net.core.somaxconn"); got != rootSomaxconn {
		t.Errorf("somaxconn of the root namespace: %s, want %s untouched", got, rootSomaxconn)
	}
	if got := readSysctl(t, "", "vm.swappiness"); got != k.swappinessTuned {
		t.Errorf("vm.swappiness while tuned: %s, want %s", got, k.swappinessTuned)
	}
	perNS := exec.Command("ip", "netns", "exec", srv, "test", "-w", "/proc/sys/net/core/rmem_max").Run() == nil
	want := map[bool]string{true: k.rmem, false: k.rmemTuned}[perNS]
	if got := readSysctl(t, "", "net.core.rmem_max"); got != want {
		t.Errorf("rmem_max of the root namespace while tuned: %s, want %s (per namespace here: %t)", got, want, perNS)
	}
}

// restored says which knobs are not back to their originals.
func (k kernelKnobs) restored(t *testing.T) []string {
	t.Helper()
	var off []string
	if got := readSysctl(t, "", "vm.swappiness"); got != k.swappiness {
		off = append(off, "vm.swappiness "+got+", want "+k.swappiness)
	}
	if got := readSysctl(t, "", "net.core.rmem_max"); got != k.rmem {
		off = append(off, "net.core.rmem_max "+got+", want "+k.rmem)
	}
	return off
}

// netnsTuneCampaign is the e2e campaign on a netns pair, tuned with the
// profile knobs in dir.
func netnsTuneCampaign(redis, linerate string) (*sweeps.Campaign, error) {
	return sweeps.ParseCampaign("netns-tune.yaml", []byte(strings.Replace(spec(redis), "name: e2e\n",
		"name: netns-tune\ntuning: knobs\nprovider: {kind: netns, binary: "+linerate+"}\n", 1)))
}

// tuneNetns opens the campaign on a netns pair in dir with profile text
// and applies it.
func tuneNetns(ctx context.Context, c *sweeps.Campaign, dir string, text []byte) (*Session, error) {
	profiles := filepath.Join(dir, "profiles")
	if err := os.MkdirAll(profiles, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(profiles, "knobs.yaml"), text, 0o644); err != nil {
		return nil, err
	}
	s, err := Open(ctx, c, dir, Options{Profiles: profiles})
	if err != nil {
		return nil, err
	}
	if _, _, err := s.tune(ctx); err != nil {
		return nil, errors.Join(err, s.Close(ctx))
	}
	return s, nil
}

// The netns pair's two agents share one kernel. A profile with host-wide
// settings (kernelKnobs) and a per-namespace one: each namespace gets the
// per-namespace value, the host-wide ones are set once, and after Down they
// are the originals again. Were both agents to snapshot them, the second
// snapshot would hold the first one's values and the kernel would end
// tuned.
func TestNetnsPairTunesHostWideSettingsOnce(t *testing.T) {
	k := newKernelKnobs(t)
	rootSomaxconn := readSysctl(t, "", "net.core.somaxconn")
	c, err := netnsTuneCampaign(redisBinary(t), labtest.Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := tuneNetns(ctx, c, t.TempDir(), k.profile())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(ctx) })
	k.checkTuned(t, s, rootSomaxconn)
	if rep, drifts, err := s.tuner.Verify(ctx); err != nil || drifts != 0 {
		t.Errorf("check while tuned: %d drifts, %v: %s", drifts, err, rep)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, off := range k.restored(t) {
		t.Errorf("after Close: %s", off)
	}
}

// netnsTuneHelper is a coordinator that tunes a netns pair with
// PARTS_PROFILE, says "tuned" and waits to be killed.
func netnsTuneHelper() int {
	c, err := netnsTuneCampaign(os.Getenv("PARTS_BIN"), os.Getenv("PARTS_LINERATE"))
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	if _, err := tuneNetns(context.Background(), c, os.Getenv("PARTS_DIR"), []byte(os.Getenv("PARTS_PROFILE"))); err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Println("tuned")
	time.Sleep(5 * time.Minute) // the test kills it long before
	return 1
}

// The coordinator of a tuned netns pair is SIGKILLed. The agents see their
// input end and revert; the server's agent reaches the kernel-wide net.*
// sysctls through the coordinator's network namespace, which it holds
// open, so they are restored although the process that named it is gone.
func TestNetnsCoordinatorKilledLeavesTheKernelUntuned(t *testing.T) {
	k := newKernelKnobs(t)
	rootSomaxconn := readSysctl(t, "", "net.core.somaxconn")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PARTS_HELPER=netns-tune", "PARTS_DIR="+t.TempDir(), "PARTS_BIN="+redisBinary(t),
		"PARTS_LINERATE="+labtest.Binary(t), "PARTS_PROFILE="+string(k.profile()))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// The dead coordinator's namespaces are leftovers: Down removes them.
	t.Cleanup(func() { _ = (&netns.Provider{}).Down(context.Background()) })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "tuned\n" {
		t.Fatalf("coordinator: %q %v", line, err)
	}
	helperNS := "lr-" + strconv.Itoa(cmd.Process.Pid) + "-"
	out, _ := exec.Command("ip", "netns", "list").Output()
	var srv string
	for _, f := range strings.Fields(string(out)) {
		if strings.HasPrefix(f, helperNS) && strings.HasSuffix(f, "-srv") {
			srv = f
		}
	}
	if got := readSysctl(t, srv, "net.core.somaxconn"); got != "1919" {
		t.Fatalf("somaxconn in %s: %s, want 1919", srv, got)
	}
	if got := readSysctl(t, "", "vm.swappiness"); got != k.swappinessTuned {
		t.Fatalf("vm.swappiness while tuned: %s, want %s", got, k.swappinessTuned)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	deadline := time.Now().Add(30 * time.Second)
	off := k.restored(t)
	for len(off) > 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		off = k.restored(t)
	}
	for _, o := range off {
		t.Errorf("30 s after the coordinator was killed: %s", o)
	}
	if got := readSysctl(t, "", "net.core.somaxconn"); got != rootSomaxconn {
		t.Errorf("somaxconn of the root namespace: %s, want %s untouched", got, rootSomaxconn)
	}
}
