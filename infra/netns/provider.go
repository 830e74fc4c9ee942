package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/kernel"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Addresses of the pair, from the benchmarking range (RFC 2544).
var (
	ServerAddr = netip.MustParseAddr("198.18.0.1")
	ClientAddr = netip.MustParseAddr("198.18.0.2")
)

// Prefix starts the name of every namespace linerate creates; leftovers of
// crashed runs are found by it.
const Prefix = "lr-"

// RunDir is where named namespaces are bind-mounted (as ip-netns does).
var RunDir = "/run/netns"

// Local is the local provider: both roles on this host, over loopback.
type Local struct {
	Binary string // linerate binary; "" is the running executable
}

// Kind is "local".
func (Local) Kind() string { return "local" }

// Up returns this host twice, on 127.0.0.1.
func (l Local) Up(ctx context.Context, s infra.Spec) (infra.Pair, error) {
	if err := s.Validate(); err != nil {
		return infra.Pair{}, err
	}
	lo := netip.MustParseAddr("127.0.0.1")
	return infra.Pair{
		Server: &Host{Label: "server", Addr: lo, Binary: l.Binary},
		Client: &Host{Label: "client", Addr: lo, Binary: l.Binary},
	}, nil
}

// Down has nothing to remove.
func (Local) Down(ctx context.Context) error { return nil }

// Provider is the netns provider: namespaces lr-<pid>-<n>-srv and
// lr-<pid>-<n>-cli joined by a veth pair, 198.18.0.1/30 on the server side
// and 198.18.0.2/30 on the client side, loopback up in each. The PID in the
// name is the creating process's, so Cleanup can tell a crashed run's
// namespaces from a live one's.
type Provider struct {
	Binary string // linerate binary; "" is the running executable
	// Keep names the pair lr-keep-<Keep>-srv/-cli instead of by PID: it
	// outlives the process that made it (`linerate infra up`) and is
	// removed only by Down with the same Keep, never as a leftover.
	Keep string

	mu    sync.Mutex
	names []string // namespaces created by Up, for Down
}

// Kind is "netns".
func (*Provider) Kind() string { return "netns" }

var seq struct {
	sync.Mutex
	n int
}

// Names of the pair's namespaces and devices; interface names stay within
// the kernel's 15 characters.
type names struct {
	base                 string
	server, client       string // namespaces
	serverDev, clientDev string
}

func newNames(keep string) names {
	base := Prefix + "keep-" + keep
	if keep == "" {
		seq.Lock()
		seq.n++
		n := seq.n
		seq.Unlock()
		base = fmt.Sprintf("%s%d-%d", Prefix, os.Getpid(), n)
	}
	return names{base: base, server: base + "-srv", client: base + "-cli", serverDev: "lr-srv", clientDev: "lr-cli"}
}

// Several clients: client i (1-based) has its own namespace and veth pair
// into the server's namespace, on its own /30 of 198.18.0.0/24: the
// server's side 198.18.0.4(i-1)+1, the client's 198.18.0.4(i-1)+2. The
// first is the pair as with one client (lr-srv 198.18.0.1 ↔ lr-cli
// 198.18.0.2); the others reach the server's 198.18.0.1 through a host
// route over their own link. Routed links rather than a bridge: each
// link's veth ends keep their own driver counters (a bridge has none).

// clientNS names client i's namespace: -cli for the first, -cliN after.
func (n names) clientNS(i int) string {
	if i == 1 {
		return n.client
	}
	return n.client + strconv.Itoa(i)
}

// serverDevFor names the server's end of client i's link.
func (n names) serverDevFor(i int) string {
	if i == 1 {
		return n.serverDev
	}
	return "lr-s" + strconv.Itoa(i)
}

// LinkAddrs are the server's and client i's addresses of client i's link.
func LinkAddrs(i int) (server, client netip.Addr) {
	b := ServerAddr.As4()
	b[3] = byte(4*(i-1) + 1)
	server = netip.AddrFrom4(b)
	b[3]++
	return server, netip.AddrFrom4(b)
}

// ServerDevices names the server namespace's ends of the links of a pair
// with clients client hosts, client 1's first.
func ServerDevices(clients int) []string {
	var n names
	n.serverDev = "lr-srv"
	out := make([]string, max(clients, 1))
	for i := range out {
		out[i] = n.serverDevFor(i + 1)
	}
	return out
}

// clientLabel labels client i's host.
func clientLabel(i int) string {
	if i == 1 {
		return "client"
	}
	return "client-" + strconv.Itoa(i)
}

// Up removes leftovers of crashed runs, then builds the pair. On error
// everything it created is removed before it returns.
func (p *Provider) Up(ctx context.Context, s infra.Spec) (pair infra.Pair, err error) {
	if err := s.Validate(); err != nil {
		return infra.Pair{}, err
	}
	if _, err := Cleanup(ctx); err != nil {
		return infra.Pair{}, err
	}
	queues := s.Queues
	if queues == 0 {
		queues = 1
	}
	n := newNames(p.Keep)
	if p.Keep != "" {
		if _, err := os.Stat(filepath.Join(RunDir, n.server)); err == nil {
			return infra.Pair{}, fmt.Errorf("netns up: %s exists: the pair %q is already up (linerate infra down --campaign %s)", n.server, p.Keep, p.Keep)
		}
	}
	defer func() {
		if err != nil {
			tctx, cancel := infra.TeardownContext(ctx)
			defer cancel()
			if derr := p.Down(tctx); derr != nil {
				err = errors.Join(err, derr)
			}
		}
	}()
	handles := map[string]netns.NsHandle{}
	defer func() {
		for _, h := range handles {
			h.Close()
		}
	}()
	clients := s.ClientCount()
	nsNames := []string{n.server}
	for i := 1; i <= clients; i++ {
		nsNames = append(nsNames, n.clientNS(i))
	}
	for _, name := range nsNames {
		if err := ctx.Err(); err != nil {
			return infra.Pair{}, fmt.Errorf("netns up: %w", err)
		}
		h, err := createNamed(name)
		if err != nil {
			return infra.Pair{}, err
		}
		p.mu.Lock()
		p.names = append(p.names, name)
		p.mu.Unlock()
		handles[name] = h
	}
	pair = infra.Pair{Server: &Host{Label: "server", Namespace: n.server, Addr: ServerAddr, Binary: p.Binary}}
	for i := 1; i <= clients; i++ {
		cli, err := p.link(n, handles, i, queues)
		if err != nil {
			return infra.Pair{}, err
		}
		pair.Clients = append(pair.Clients, cli)
	}
	pair.Client = pair.Clients[0]
	if clients == 1 {
		pair.Clients = nil // one client: the pair as before
	}
	return pair, nil
}

// link joins client namespace i to the server's with a veth pair of
// queues queues and addresses it; beyond the first link, the server's
// address is a hop away.
func (p *Provider) link(n names, handles map[string]netns.NsHandle, i, queues int) (*Host, error) {
	srvDev, cliNS := n.serverDevFor(i), n.clientNS(i)
	veth := netlink.NewVeth(netlink.LinkAttrs{
		Name:        srvDev,
		Namespace:   netlink.NsFd(handles[n.server]),
		NumTxQueues: queues, NumRxQueues: queues,
	})
	veth.PeerName = n.clientDev
	veth.PeerNamespace = netlink.NsFd(handles[cliNS])
	veth.PeerNumTxQueues, veth.PeerNumRxQueues = uint32(queues), uint32(queues)
	if err := netlink.LinkAdd(veth); err != nil {
		return nil, fmt.Errorf("netns up: add veth %s/%s with %d queues: %w", srvDev, n.clientDev, queues, err)
	}
	srvAddr, cliAddr := LinkAddrs(i)
	if err := configure(handles[n.server], n.server, srvDev, srvAddr, netip.Addr{}); err != nil {
		return nil, err
	}
	via := srvAddr
	if i == 1 {
		via = netip.Addr{}
	}
	if err := configure(handles[cliNS], cliNS, n.clientDev, cliAddr, via); err != nil {
		return nil, err
	}
	return &Host{Label: clientLabel(i), Namespace: cliNS, Addr: cliAddr, Binary: p.Binary}, nil
}

// createNamed makes a named namespace without moving the caller: the work
// happens on a locked thread that goes back to its namespace, or is thrown
// away.
func createNamed(name string) (netns.NsHandle, error) {
	if err := shareRunDir(); err != nil {
		return netns.None(), err
	}
	type result struct {
		h   netns.NsHandle
		err error
	}
	rc := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			rc <- result{err: fmt.Errorf("netns up: current namespace: %w", err)}
			return
		}
		defer orig.Close()
		h, err := netns.NewNamed(name)
		if serr := netns.Set(orig); serr != nil {
			if h.IsOpen() {
				h.Close()
			}
			rc <- result{err: fmt.Errorf("netns up: return from %s: %w", name, serr)}
			return // the thread stays locked and ends with the goroutine
		}
		runtime.UnlockOSThread()
		if err != nil {
			rc <- result{err: fmt.Errorf("netns up: create %s: %w", name, err)}
			return
		}
		rc <- result{h: h}
	}()
	r := <-rc
	return r.h, r.err
}

// shareRunDir makes RunDir a shared mount point of its own, as `ip netns
// add` does on first use, before a namespace is mounted in it. Were ip to do
// it later, its recursive bind would mount every namespace there twice, one
// copy out of reach of any path, and removing the file would fail with
// EBUSY.
func shareRunDir() error {
	if err := os.MkdirAll(RunDir, 0o755); err != nil {
		return fmt.Errorf("netns up: %w", err)
	}
	for bound := false; ; bound = true {
		err := unix.Mount("", RunDir, "none", unix.MS_SHARED|unix.MS_REC, "")
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EINVAL) || bound {
			return fmt.Errorf("netns up: share %s: %w", RunDir, err)
		}
		// EINVAL: not a mount point yet.
		if err := unix.Mount(RunDir, RunDir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("netns up: bind %s on itself: %w", RunDir, err)
		}
	}
}

// configure sets the address on the veth end and brings it and loopback
// up; with via set, the server's address is routed through it.
func configure(ns netns.NsHandle, name, dev string, addr, via netip.Addr) error {
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return fmt.Errorf("netns up: netlink in %s: %w", name, err)
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("netns up: %s: find lo: %w", name, err)
	}
	if err := h.LinkSetUp(lo); err != nil {
		return fmt.Errorf("netns up: %s: lo up: %w", name, err)
	}
	link, err := h.LinkByName(dev)
	if err != nil {
		return fmt.Errorf("netns up: %s: find %s: %w", name, dev, err)
	}
	ipnet := &net.IPNet{IP: addr.AsSlice(), Mask: net.CIDRMask(30, 32)}
	if err := h.AddrAdd(link, &netlink.Addr{IPNet: ipnet}); err != nil {
		return fmt.Errorf("netns up: %s: add %s to %s: %w", name, ipnet, dev, err)
	}
	if err := h.LinkSetUp(link); err != nil {
		return fmt.Errorf("netns up: %s: %s up: %w", name, dev, err)
	}
	if via.IsValid() {
		dst := &net.IPNet{IP: ServerAddr.AsSlice(), Mask: net.CIDRMask(32, 32)}
		if err := h.RouteAdd(&netlink.Route{LinkIndex: link.Attrs().Index, Dst: dst, Gw: via.AsSlice()}); err != nil {
			return fmt.Errorf("netns up: %s: route %s via %s: %w", name, dst, via, err)
		}
	}
	return nil
}

// Down removes the namespaces Up created (their veth ends go with them)
// and any leftovers of crashed runs. Processes still inside them are
// killed: they were started for the pair.
func (p *Provider) Down(ctx context.Context) error {
	p.mu.Lock()
	names := p.names
	p.names = nil
	p.mu.Unlock()
	if p.Keep != "" {
		n := newNames(p.Keep)
		names = append(names, n.server)
		for i := 1; i <= infra.MaxClients; i++ {
			names = append(names, n.clientNS(i))
		}
	}
	var errs []error
	for _, n := range names {
		if err := remove(n); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := Cleanup(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// remove kills what runs in the namespace, then unmounts and deletes it.
func remove(name string) error {
	killInside(name)
	if err := netns.DeleteNamed(name); err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("netns down: delete %s: %w", name, err)
	}
	// An unmounted but present file (EINVAL above) is removed too.
	if err := os.Remove(filepath.Join(RunDir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("netns down: remove %s: %w", name, err)
	}
	return nil
}

// killInside SIGKILLs every process whose network namespace is name's, so
// the namespace (and its veth) really goes away when unmounted. A process
// entering it (ip netns exec opens the file, then joins) can miss one
// scan, and once the file is unmounted no scan finds it again: scans
// repeat until two in a row, killEvery apart, find nothing (at most
// killFor in all).
func killInside(name string) {
	path, deadline := filepath.Join(RunDir, name), time.Now().Add(killFor)
	for empty := 0; ; time.Sleep(killEvery) {
		pids, err := kernel.FS{}.InNetns(path)
		if err != nil {
			return
		}
		empty++
		for _, pid := range pids {
			if pid != os.Getpid() {
				syscall.Kill(pid, syscall.SIGKILL)
				empty = 0
			}
		}
		if empty == 2 || time.Now().After(deadline) {
			return // no sleep after the last scan
		}
	}
}

// How long killInside keeps looking for processes entering a namespace.
const (
	killEvery = 50 * time.Millisecond
	killFor   = 2 * time.Second
)

// Leftover is a namespace of a linerate process that no longer runs.
type Leftover struct {
	Name string
	PID  int
}

// Leftovers lists linerate's namespaces whose creating process is gone.
// Namespaces of live processes (another run, another test) are left alone.
func Leftovers() ([]Leftover, error) {
	ents, err := os.ReadDir(RunDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("netns: list %s: %w", RunDir, err)
	}
	var out []Leftover
	for _, e := range ents {
		pid, ok := ownerPID(e.Name())
		if !ok {
			continue
		}
		if pid != os.Getpid() && !alive(pid) {
			out = append(out, Leftover{Name: e.Name(), PID: pid})
		}
	}
	return out, nil
}

// Owned lists every namespace named by this provider (lr-…), live or
// leftover, for status.
func Owned() ([]string, error) {
	ents, err := os.ReadDir(RunDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("netns: list %s: %w", RunDir, err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), Prefix) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// ownerPID reads the PID out of lr-<pid>-<n>-<role>.
func ownerPID(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, Prefix)
	if !ok {
		return 0, false
	}
	pidStr, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(pidStr)
	return pid, err == nil && pid > 0
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Cleanup removes the leftovers of crashed runs and returns their names.
func Cleanup(ctx context.Context) ([]string, error) {
	left, err := Leftovers()
	if err != nil {
		return nil, err
	}
	var done []string
	var errs []error
	for _, l := range left {
		if err := ctx.Err(); err != nil {
			return done, errors.Join(append(errs, fmt.Errorf("netns cleanup: %w", err))...)
		}
		if err := remove(l.Name); err != nil {
			errs = append(errs, err)
			continue
		}
		done = append(done, l.Name)
	}
	return done, errors.Join(errs...)
}

// Pair returns the hosts of a kept pair that is up (made by another
// process with the same Keep).
func (p *Provider) Pair() (infra.Pair, error) {
	if p.Keep == "" {
		return infra.Pair{}, errors.New("netns: only a kept pair (Keep set) can be found again")
	}
	n := newNames(p.Keep)
	for _, ns := range []string{n.server, n.client} {
		if _, err := os.Stat(filepath.Join(RunDir, ns)); err != nil {
			return infra.Pair{}, fmt.Errorf("netns: pair %q is not up: %w", p.Keep, err)
		}
	}
	pair := infra.Pair{Server: &Host{Label: "server", Namespace: n.server, Addr: ServerAddr, Binary: p.Binary}}
	for i := 1; i <= infra.MaxClients; i++ {
		if _, err := os.Stat(filepath.Join(RunDir, n.clientNS(i))); err != nil {
			break
		}
		_, addr := LinkAddrs(i)
		pair.Clients = append(pair.Clients, &Host{Label: clientLabel(i), Namespace: n.clientNS(i), Addr: addr, Binary: p.Binary})
	}
	pair.Client = pair.Clients[0]
	if len(pair.Clients) == 1 {
		pair.Clients = nil
	}
	return pair, nil
}

// Settings are a campaign's netns provider settings. The queue count is
// not one of them: it comes from the tuning profile, through infra.Spec.
type Settings struct {
	// Binary is the linerate binary run in the namespaces; "" is the
	// running executable.
	Binary string `yaml:"binary"`
}

// Validate has nothing to refuse: any path may name the binary.
func (Settings) Validate() error { return nil }
