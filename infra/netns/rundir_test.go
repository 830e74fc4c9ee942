package netns

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// `ip netns add`, the first time on a machine where /run/netns is not yet a
// mount point, bind-mounts the directory on itself with the namespaces
// already in it: each of those is then mounted twice, once out of reach of
// any path, and removing its file fails with EBUSY. Tests here and other
// tools use ip beside linerate, so a fresh CI machine met this. The test
// makes that fresh state in a mount namespace of its own (a child under
// unshare -m), so the machine's mounts are not touched.
func TestRemoveAfterIPNetnsAddOnAFreshRunDir(t *testing.T) {
	needRoot(t)
	if os.Getenv("LR_NETNS_FRESH_CHILD") == "1" {
		freshRunDirChild(t)
		return
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Fatalf("unshare (util-linux) missing: run .ci/setup: %v", err)
	}
	cmd := exec.Command("unshare", "-m", "--propagation", "private",
		os.Args[0], "-test.run=^TestRemoveAfterIPNetnsAddOnAFreshRunDir$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "LR_NETNS_FRESH_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func freshRunDirChild(t *testing.T) {
	// Undo ip's self-bind, in this mount namespace only.
	for i := 0; i < 8 && isMountPoint(t, RunDir); i++ {
		if err := unix.Unmount(RunDir, unix.MNT_DETACH); err != nil {
			t.Fatalf("unmount %s in the child's mount namespace: %v", RunDir, err)
		}
	}
	name := fmt.Sprintf("%s%d-fresh", Prefix, os.Getpid())
	h, err := createNamed(name)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	other := name + "-ip"
	if out, err := exec.Command("ip", "netns", "add", other).CombinedOutput(); err != nil {
		remove(name)
		t.Fatalf("ip netns add %s: %v\n%s", other, err, out)
	}
	defer exec.Command("ip", "netns", "del", other).Run()
	if err := remove(name); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(RunDir, name)); !os.IsNotExist(err) {
		t.Errorf("%s still there after remove: %v", name, err)
	}
}

func isMountPoint(t *testing.T, dir string) bool {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 4 && fields[4] == dir {
			return true
		}
	}
	return false
}
