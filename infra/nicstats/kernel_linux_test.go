package nicstats

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/netns"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// pair brings up a throwaway namespace pair (198.18.0.1 and .2 on a veth)
// and takes it down when the test ends.
func pair(t *testing.T) (srv, cli infra.Entered) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("network namespaces need root, and CI runs as root")
		}
		t.Skip("network namespaces need root (CI runs these)")
	}
	labtest.Need(t, "ip")
	p := &netns.Provider{}
	t.Cleanup(func() {
		if err := p.Down(context.Background()); err != nil {
			t.Errorf("down: %v", err)
		}
	})
	pr, err := p.Up(context.Background(), infra.Spec{Campaign: "nicstats", Queues: 2})
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	return pr.Server.(infra.Entered), pr.Client.(infra.Entered)
}

// openIn opens an Ethtool reader inside h's namespace.
func openIn(t *testing.T, h infra.Entered) *Ethtool {
	t.Helper()
	var e *Ethtool
	if err := h.Do(func() (err error) { e, err = OpenEthtool(); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// sandwich reads ifname through e, then through the `ethtool -S` command
// (run), then through e again, and checks the three list the same counters
// and that every counter of the command lies between the two reads (the
// counters of a live NIC move meanwhile).
func sandwich(t *testing.T, e *Ethtool, ifname string, run func(argv ...string) ([]byte, error)) Counters {
	t.Helper()
	ctx := context.Background()
	a, err := e.Read(ctx, ifname)
	if err != nil {
		t.Fatal(err)
	}
	out, err := run(labtest.Need(t, "ethtool"), "-S", ifname)
	if err != nil {
		t.Fatalf("ethtool -S %s: %v", ifname, err)
	}
	cmd, err := ParseEthtoolS(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.Read(ctx, ifname)
	if err != nil {
		t.Fatal(err)
	}
	names := func(c Counters) []string {
		var n []string
		for k := range c {
			n = append(n, k)
		}
		slices.Sort(n)
		return n
	}
	if !slices.Equal(names(a), names(cmd)) || !slices.Equal(names(b), names(cmd)) {
		t.Fatalf("%s: the ioctl lists %v, ethtool -S %v", ifname, names(a), names(cmd))
	}
	if len(cmd) == 0 {
		t.Fatalf("%s: no counters", ifname)
	}
	for n, v := range cmd {
		if a[n] > v || v > b[n] {
			t.Errorf("%s %s: ethtool -S says %d, the ioctl %d before and %d after", ifname, n, v, a[n], b[n])
		}
	}
	return b
}

// The veth ends of a namespace pair: the ioctl reads what ethtool -S
// prints, in both namespaces.
func TestVethMatchesEthtoolCommand(t *testing.T) {
	srv, cli := pair(t)
	for _, h := range []struct {
		host infra.Entered
		dev  string
	}{{srv, "lr-srv"}, {cli, "lr-cli"}} {
		e := openIn(t, h.host)
		if d, err := e.Driver(h.dev); err != nil || d != "veth" {
			t.Errorf("driver of %s: %q, %v; want veth", h.dev, d, err)
		}
		c := sandwich(t, e, h.dev, func(argv ...string) ([]byte, error) { return h.host.Run(context.Background(), argv...) })
		for _, n := range []string{"peer_ifindex", "rx_queue_0_drops", "rx_queue_1_drops", "tx_queue_1_xdp_xmit_errors"} {
			if _, ok := c[n]; !ok {
				t.Errorf("%s: no %s among %d counters", h.dev, n, len(c))
			}
		}
	}
}

// The machine's own virtio NIC, read only (no traffic is sent to it): its
// counters move as the machine talks, so the command's values must lie
// between two reads. Machines without a virtio NIC have nothing to test.
func TestVirtioMatchesEthtoolCommand(t *testing.T) {
	e, err := OpenEthtool()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	links, err := os.ReadDir("/sys/class/net")
	if err != nil {
		t.Fatal(err)
	}
	var dev string
	for _, l := range links {
		if d, err := e.Driver(l.Name()); err == nil && d == "virtio_net" {
			dev = l.Name()
			break
		}
	}
	if dev == "" {
		t.Skip("no virtio_net interface on this machine")
	}
	before := sandwich(t, e, dev, func(argv ...string) ([]byte, error) { return exec.Command(argv[0], argv[1:]...).Output() })
	after, err := e.Read(context.Background(), dev)
	if err != nil {
		t.Fatal(err)
	}
	d := Delta(before, after)
	for _, n := range []string{"rx_drops", "tx_tx_timeouts", "rx0_drops", "tx0_tx_timeouts"} {
		if _, ok := d.Counters[n]; !ok {
			t.Errorf("%s: %s not watched; deltas %v", dev, n, d.Counters)
		}
	}
	if _, ok := d.Counters["rx_kicks"]; ok {
		t.Errorf("%s: rx_kicks watched", dev)
	}
}

func TestReadRefuses(t *testing.T) {
	e, err := OpenEthtool()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	if _, err := e.Read(ctx, "lo"); !errors.Is(err, ErrNoStats) || !strings.Contains(err.Error(), "lo") {
		t.Errorf("lo: %v, want ErrNoStats naming lo", err)
	}
	if _, err := e.Read(ctx, "lrnone0"); !errors.Is(err, ErrNoInterface) || !strings.Contains(err.Error(), "lrnone0") {
		t.Errorf("lrnone0: %v, want ErrNoInterface naming it", err)
	}
	if _, err := e.Driver("lrnone0"); !errors.Is(err, ErrNoInterface) {
		t.Errorf("driver of lrnone0: %v, want ErrNoInterface", err)
	}
	for _, n := range []string{"", "sixteen-letters0"} {
		if _, err := e.Read(ctx, n); err == nil || !strings.Contains(err.Error(), "1-15 characters") {
			t.Errorf("Read(%q): %v, want a refusal of the name", n, err)
		}
	}
}

// xdpDrop loads the smallest XDP program there is, "return XDP_DROP", with
// the bpf syscall, and returns its file descriptor.
func xdpDrop(t *testing.T) int {
	t.Helper()
	insns := []byte{
		0xb7, 0x00, 0, 0, 1, 0, 0, 0, // r0 = 1 (XDP_DROP)
		0x95, 0x00, 0, 0, 0, 0, 0, 0, // exit
	}
	license := []byte("GPL\x00")
	attr := struct {
		progType, insnCnt uint32
		insns, license    uint64
		logLevel, logSize uint32
		logBuf            uint64
		kernVersion       uint32
		progFlags         uint32
	}{progType: unix.BPF_PROG_TYPE_XDP, insnCnt: 2,
		insns: uint64(uintptr(unsafe.Pointer(&insns[0]))), license: uint64(uintptr(unsafe.Pointer(&license[0])))}
	fd, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_PROG_LOAD, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	runtime.KeepAlive(insns)
	runtime.KeepAlive(license)
	if errno == unix.ENOSYS {
		t.Skip("this kernel has no bpf syscall, so no XDP to make veth count drops")
	}
	if errno != 0 {
		t.Fatalf("load XDP program: %v", errno)
	}
	t.Cleanup(func() { unix.Close(int(fd)) })
	return int(fd)
}

// Drops a real driver counts go through the reader and the window: an XDP
// program that drops everything on the server's veth end makes veth count
// every packet the client sends in rx_queue_N_xdp_drops, and the window's
// deltas hold exactly that many.
func TestVethDropsThroughWindow(t *testing.T) {
	srv, cli := pair(t)
	ctx := context.Background()
	// Only our packets reach the server's end: IPv6 (router and neighbour
	// solicitations) off on the client, and the server's address pinned in
	// the client's neighbour table so no ARP is needed (it would be dropped).
	if out, err := cli.Run(ctx, "sysctl", "-qw", "net.ipv6.conf.lr-cli.disable_ipv6=1"); err != nil {
		t.Fatalf("disable IPv6 on lr-cli: %v %s", err, out)
	}
	var mac string
	fd := xdpDrop(t)
	err := srv.Do(func() error {
		l, err := netlink.LinkByName("lr-srv")
		if err != nil {
			return err
		}
		mac = l.Attrs().HardwareAddr.String()
		return netlink.LinkSetXdpFd(l, fd)
	})
	if err != nil {
		t.Fatalf("attach XDP to lr-srv: %v", err)
	}
	if out, err := cli.Run(ctx, "ip", "neigh", "replace", netns.ServerAddr.String(), "lladdr", mac, "dev", "lr-cli", "nud", "permanent"); err != nil {
		t.Fatalf("pin neighbour: %v %s", err, out)
	}

	e := openIn(t, srv)
	w, err := Begin(ctx, e, "lr-srv")
	if err != nil {
		t.Fatal(err)
	}
	const packets = 300
	conn, err := cli.DialContext(ctx, "udp", netns.ServerAddr.String()+":9")
	if err != nil {
		t.Fatal(err)
	}
	for range packets {
		if _, err := conn.Write([]byte("linerate nicstats test")); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close()

	sum := func(d Deltas, suffix string) (n uint64) {
		for k, v := range d.Counters {
			if strings.HasSuffix(k, suffix) {
				n += v
			}
		}
		return n
	}
	var d Deltas
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if d, err = w.End(ctx); err != nil {
			t.Fatal(err)
		}
		if sum(d, "_xdp_drops") >= packets || time.Now().After(deadline) {
			break
		}
	}
	if got := sum(d, "_xdp_drops"); got != packets {
		t.Errorf("rx_queue_*_xdp_drops rose by %d, want %d; deltas %v", got, packets, d.Counters)
	}
	if _, ok := d.Counters["rx_queue_0_xdp_packets"]; ok {
		t.Errorf("xdp_packets is watched")
	}
	if a := Allowance(d); a != nil {
		t.Errorf("veth has no allowance counters, Allowance = %v", a)
	}
}

// Reads from fresh goroutines, as a runner makes them at each window
// edge: a goroutine starts with a small stack, and the ioctl's buffers must
// be where the kernel writes even when the stack grows under the call.
// Each read starts at another depth of a fresh goroutine's stack, so one
// of them meets the growth inside the ioctl's call. (The ethtool library
// linerate used first passed stack addresses as uintptr: a grown stack
// moved the buffer, the kernel wrote to the old place, and the read came
// back empty, without an error.)
func TestReadsFromFreshGoroutines(t *testing.T) {
	srv, _ := pair(t)
	e := openIn(t, srv)
	const depths = 400
	empty, drivers := 0, 0
	for depth := range depths {
		var c Counters
		var d string
		var err, derr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			atDepth(depth, func() {
				c, err = e.Read(context.Background(), "lr-srv")
				d, derr = e.Driver("lr-srv")
			})
		}()
		<-done
		if err != nil || derr != nil {
			t.Fatalf("read: %v, driver: %v", err, derr)
		}
		if len(c) == 0 {
			empty++
		}
		if d != "veth" {
			drivers++
		}
	}
	if empty > 0 || drivers > 0 {
		t.Errorf("of %d reads from fresh goroutines, %d came back without counters and %d without the driver's name", depths, empty, drivers)
	}
}

// atDepth calls f under n frames of 32 bytes each.
//
//go:noinline
func atDepth(n int, f func()) {
	var pad [32]byte
	if n > 0 {
		atDepth(n-1, f)
	} else {
		f()
	}
	runtime.KeepAlive(pad)
}
