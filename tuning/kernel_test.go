package tuning

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// These tests use the real kernel: veth pairs inside network namespaces the
// test creates (names start with lrtune) and always deletes. Nothing outside
// the namespace is changed: the ioctl's socket is opened inside it, and the
// full apply/revert runs in a child process under `ip netns exec`.

const childEnv = "LINERATE_TUNING_NETNS_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "cycle":
		os.Exit(netnsChild())
	case "refuse":
		os.Exit(netnsRefuseChild())
	}
	var err error
	if sharedRoot, err = os.MkdirTemp("", "tuning-fixtures-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// No goroutine (a hop into a namespace, a command's waiter)
	// outlives the tests; the fixtures go after the check.
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(sharedRoot)
		os.Exit(code)
	}))
}

// needRoot skips outside CI when the test cannot create namespaces, and
// fails in CI, where it must run.
func needRoot(t *testing.T) {
	t.Helper()
	why := ""
	if os.Geteuid() != 0 {
		why = "needs root to create network namespaces"
	} else if _, err := exec.LookPath("ip"); err != nil {
		why = "needs ip (iproute2) to create network namespaces"
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal(why)
	}
	t.Skip(why + " (runs in CI)")
}

var nsSeq atomic.Int32

// vethNetns creates a namespace holding lrtune0 <-> lrtune1, each with four
// rx and four tx queues, and deletes it when the test ends.
func vethNetns(t *testing.T) string {
	t.Helper()
	ns := fmt.Sprintf("lrtune-%d-%d", os.Getpid(), nsSeq.Add(1))
	ip := func(args ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(bg, 20*time.Second)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	ip("netns", "add", ns)
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
			t.Errorf("delete namespace %s: %v: %s", ns, err, out)
		}
	})
	ip("-n", ns, "link", "add", "lrtune0", "numtxqueues", "4", "numrxqueues", "4",
		"type", "veth", "peer", "name", "lrtune1", "numtxqueues", "4", "numrxqueues", "4")
	ip("-n", ns, "addr", "add", "198.18.0.1/30", "dev", "lrtune0")
	ip("-n", ns, "link", "set", "lrtune0", "up")
	ip("-n", ns, "link", "set", "lrtune1", "up")
	return ns
}

func TestEthtoolChannelsVethInNetns(t *testing.T) {
	needRoot(t)
	ns := vethNetns(t)
	e := EthtoolChannels{NetnsPath: "/run/netns/" + ns}

	// The interface lives only inside the namespace.
	if _, err := (EthtoolChannels{}).Channels(bg, "lrtune0"); !errors.Is(err, ErrUnknownInterface) {
		t.Fatalf("lrtune0 seen outside its namespace: %v", err)
	}
	ch, err := e.Channels(bg, "lrtune0")
	if err != nil {
		t.Fatal(err)
	}
	if ch.MaxRX != 4 || ch.MaxTX != 4 || ch.RX != 4 || ch.TX != 4 || ch.MaxCombined != 0 {
		t.Fatalf("veth created with 4 queues reports %+v", ch)
	}
	orig := ch.Counts()
	if err := e.SetChannels(bg, "lrtune0", QueueCounts{RX: 2, TX: 2}); err != nil {
		t.Fatal(err)
	}
	if ch, err = e.Channels(bg, "lrtune0"); err != nil || ch.RX != 2 || ch.TX != 2 {
		t.Fatalf("after setting rx 2 tx 2: %+v, %v", ch, err)
	}
	// The kernel refuses counts above the maximum and a combined count on a
	// driver without combined queues.
	for _, bad := range []QueueCounts{{RX: 5}, {Combined: 2}} {
		if err := e.SetChannels(bg, "lrtune0", bad); err == nil {
			t.Errorf("set %s accepted", bad)
		}
	}
	if err := e.SetChannels(bg, "lrtune0", orig); err != nil {
		t.Fatal(err)
	}
	if ch, err = e.Channels(bg, "lrtune0"); err != nil || ch.Counts() != orig {
		t.Fatalf("after revert: %+v, %v; want %s", ch, err, orig)
	}
	if peer, err := e.Channels(bg, "lrtune1"); err != nil || peer.RX != 4 || peer.TX != 4 {
		t.Errorf("peer changed: %+v, %v", peer, err)
	}
	if _, err := (EthtoolChannels{}).Channels(bg, "lo"); !errors.Is(err, ErrNotSupported) {
		t.Errorf("loopback channels: want ErrNotSupported, got %v", err)
	}
	// Every ioctl went through a thread that came back to this namespace.
	if _, err := net.InterfaceByName("lrtune0"); err == nil {
		t.Error("lrtune0 visible from the test's namespace: a thread stayed in the other one")
	}
}

// childResult is what the child reports from inside the namespace.
type childResult struct {
	Changes   []Change `json:"changes"`
	Notes     []string `json:"notes"`
	Applied   State    `json:"applied"`
	Snapshot  State    `json:"snapshot"`
	Reverted  State    `json:"reverted"`
	VerifyOK  bool     `json:"verify_ok"`
	DriftSeen []Drift  `json:"drift_seen"`
	Err       string   `json:"err,omitempty"`
}

var netnsProfile = Profile{
	NIC:        "lrtune0",
	Irqbalance: IrqbalanceLeave, // the host's irqbalance is not ours to touch
	Queues:     Queues{RX: 2, TX: 2},
	Sysctls:    map[string]string{"net.core.somaxconn": "1024", "net.ipv4.tcp_rmem": "4096 65536 8388608"},
}

// netnsChild runs under `ip netns exec`, where /sys shows the namespace's
// devices and /proc/sys/net its settings: the whole cycle on the live host.
func netnsChild() int {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var r childResult
	err := func() error {
		h := NewLiveHost("/")
		pl, err := MakePlan(ctx, h, netnsProfile)
		if err != nil {
			return fmt.Errorf("plan: %w", err)
		}
		r.Changes, r.Notes = pl.Changes, pl.Desired.Notes
		snap, rep, err := Apply(ctx, h, netnsProfile)
		if err != nil {
			return fmt.Errorf("apply: %w", err)
		}
		r.Snapshot, r.VerifyOK = snap.State, rep.OK
		if r.Applied, err = CaptureLike(ctx, h, snap); err != nil {
			return err
		}
		// Drift the queue count behind apply's back; verify must see it.
		if err := h.Channels.SetChannels(ctx, "lrtune0", QueueCounts{RX: 3}); err != nil {
			return err
		}
		drift, err := Verify(ctx, h, netnsProfile)
		if err != nil {
			return err
		}
		r.DriftSeen = drift.Drifts
		if err := Revert(ctx, h, snap); err != nil {
			return err
		}
		r.Reverted, err = CaptureLike(ctx, h, snap)
		return err
	}()
	if err != nil {
		r.Err = err.Error()
	}
	if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
		return 1
	}
	return 0
}

func TestApplyRevertVethInNetns(t *testing.T) {
	needRoot(t)
	hostSomaxconn, err := os.ReadFile("/proc/sys/net/core/somaxconn")
	if err != nil {
		t.Fatal(err)
	}
	ns := vethNetns(t)
	r := runNetnsChild(t, ns, "cycle")
	if r.Err != "" {
		t.Fatalf("child: %s", r.Err)
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "lrtune0 has no IRQs to pin") {
		t.Errorf("want a 'no IRQs to pin' note for veth, got %q", r.Notes)
	}
	var whats []string
	for _, c := range r.Changes {
		whats = append(whats, c.What+" "+c.Object)
	}
	if got := strings.Join(whats, ", "); got != "queues lrtune0, sysctl net.core.somaxconn, sysctl net.ipv4.tcp_rmem" {
		t.Errorf("planned changes: %s", got)
	}
	if !r.VerifyOK {
		t.Error("verify after apply reported drift")
	}
	if q := r.Applied.Queues; q == nil || q.RX != 2 || q.TX != 2 {
		t.Errorf("queues after apply: %+v", q)
	}
	if len(r.Applied.Sysctls) != 2 || r.Applied.Sysctls[0].Value != "1024" || normalizeSysctl(r.Applied.Sysctls[1].Value) != "4096 65536 8388608" {
		t.Errorf("sysctls after apply: %+v", r.Applied.Sysctls)
	}
	if len(r.DriftSeen) != 1 || r.DriftSeen[0].What != "queues" || r.DriftSeen[0].Got != "rx 3 tx 2" {
		t.Errorf("drift after changing rx behind apply's back: %+v", r.DriftSeen)
	}
	if !reflect.DeepEqual(r.Reverted, r.Snapshot) {
		t.Errorf("after revert:\n got %+v\nwant %+v", r.Reverted, r.Snapshot)
	}
	if now, _ := os.ReadFile("/proc/sys/net/core/somaxconn"); !bytes.Equal(now, hostSomaxconn) {
		t.Errorf("the host's somaxconn changed: %q -> %q", hostSomaxconn, now)
	}
}

// runNetnsChild runs this test binary inside the namespace in one of the
// child modes and decodes its report.
func runNetnsChild(t *testing.T, ns, mode string) childResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(bg, 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", ns, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, stderr.String())
	}
	var r childResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("child output %q: %v", out, err)
	}
	t.Logf("child: %s", out)
	return r
}

// netnsRefuseChild applies a profile whose last sysctl the kernel refuses,
// after the queue count and another sysctl were already changed.
func netnsRefuseChild() int {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := netnsProfile
	p.Sysctls = map[string]string{"net.core.somaxconn": "1024", "net.ipv4.tcp_rmem": "not-a-number"}
	h := NewLiveHost("/")
	var r childResult
	snap, _, err := Apply(ctx, h, p)
	var re *RefusedError
	switch {
	case err == nil:
		r.Err = "apply accepted a value the kernel should refuse"
	case !errors.As(err, &re):
		r.Err = "apply failed without a RefusedError: " + err.Error()
	default:
		r.Notes = []string{err.Error(), re.Path, re.Value}
		r.Snapshot = snap.State
		if r.Reverted, err = CaptureLike(ctx, h, snap); err != nil {
			r.Err = err.Error()
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
		return 1
	}
	return 0
}

// TestApplyRefusedByKernelInNetns: the kernel refuses a write halfway
// through apply; the error names the file and value, and what apply had
// already done (queue count, another sysctl) is rolled back.
func TestApplyRefusedByKernelInNetns(t *testing.T) {
	needRoot(t)
	ns := vethNetns(t)
	r := runNetnsChild(t, ns, "refuse")
	if r.Err != "" {
		t.Fatal(r.Err)
	}
	if len(r.Notes) != 3 || r.Notes[1] != "/proc/sys/net/ipv4/tcp_rmem" || r.Notes[2] != "not-a-number" || !strings.Contains(r.Notes[0], "rolled back") {
		t.Errorf("refusal: %q", r.Notes)
	}
	if q := r.Snapshot.Queues; q == nil || q.RX != 4 {
		t.Fatalf("snapshot queues %+v", q)
	}
	if !reflect.DeepEqual(r.Reverted, r.Snapshot) {
		t.Errorf("after the rollback:\n got %+v\nwant %+v", r.Reverted, r.Snapshot)
	}
}

// The live host, read only: loopback has no IRQs (a note, not an error),
// and an unknown interface is an error naming it.
func TestLivePlanLoopback(t *testing.T) {
	h := NewLiveHost("/")
	pl, err := MakePlan(bg, h, Profile{NIC: "lo", Irqbalance: IrqbalanceLeave})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(pl.Desired.Notes, "\n"), "lo has no IRQs to pin") || len(pl.Desired.IRQs) != 0 {
		t.Errorf("notes %q, pins %v", pl.Desired.Notes, pl.Desired.IRQs)
	}
	if pl.Desired.Queues != nil || len(pl.Changes) != 0 {
		t.Errorf("loopback plan should change nothing: %v", pl.Changes)
	}
	if _, err := MakePlan(bg, h, Profile{NIC: "lrtune-none", Irqbalance: IrqbalanceLeave}); !errors.Is(err, ErrUnknownInterface) || !strings.Contains(err.Error(), "lrtune-none") {
		t.Errorf("unknown interface: %v", err)
	}
}
