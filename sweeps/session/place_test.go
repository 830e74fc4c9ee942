package session

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/infra/aws"
	"github.com/linerate/linerate/infra/aws/awsfake"
	"github.com/linerate/linerate/infra/netns"
	"github.com/linerate/linerate/infra/sshhost"
	"github.com/linerate/linerate/infra/sshhost/sshtest"
	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/sweeps/hostmetrics"
)

// The netns placement: servers start in the server namespace on
// 198.18.0.1, `linerate bench` runs in the client namespace, the server's
// NIC counters are its veth's, and the namespaces are gone after Close.
func TestRealCampaignOnNetnsPair(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("network namespaces need root; CI runs as root")
		}
		t.Skip("network namespaces need root")
	}
	bin := redisBinary(t)
	lr := labtest.Binary(t)
	src := withLink(strings.Replace(spec(bin), "name: e2e\n", "name: e2e-netns\ntuning: queues\nprovider: {kind: netns, binary: "+lr+"}\n", 1))
	c := parse(t, "e2e-netns.yaml", src)
	dir, profiles := t.TempDir(), t.TempDir()
	// The profile asks for 2 queues: the veth is created with 2, and the
	// agent in each namespace sets them and a per-namespace sysctl there.
	profileIn(t, profiles, "queues", "nic_address: 198.18.0.1\nirqbalance: leave\nqueues: {rx: 2, tx: 2}\nsysctls: {net.core.somaxconn: \"1313\"}\n")
	s := open(t, c, dir, Options{Profiles: profiles})
	srvNS, cliNS := netnsPair(t, s)
	// The calibration's closed-loop windows through a shaped link.
	sshtest.Shape(t, srvNS, cliNS)
	run := runAll(t, s)
	for _, check := range []struct{ cmd, want string }{
		{"ls -d /sys/class/net/lr-srv/queues/rx-* | wc -l", "2"},
		{"cat /proc/sys/net/core/somaxconn", "1313"},
	} {
		got, err := exec.Command("ip", "netns", "exec", srvNS, "sh", "-c", check.cmd).Output()
		if err != nil || strings.TrimSpace(string(got)) != check.want {
			t.Errorf("in %s, %s: %q %v, want %s", srvNS, check.cmd, got, err, check.want)
		}
	}
	for _, rec := range run.Sorted() {
		checkHDRFiles(t, dir, rec) // bench ran on the client host: the record came back as JSON
		if rec.Result.Workload.Host != "198.18.0.1" {
			t.Errorf("%s: bench addressed %s, not the server namespace", rec.CellID, rec.Result.Workload.Host)
		}
		var veth *hostmetrics.NICRate
		for i, n := range rec.Host.NICs {
			if n.Name == "lr-srv" {
				veth = &rec.Host.NICs[i]
			}
		}
		if veth == nil || veth.TxBytes+veth.RxBytes == 0 {
			t.Errorf("%s: no traffic on the server's veth: %+v", rec.CellID, rec.Host.NICs)
		}
		if rec.Tuning == nil || rec.Tuning.Drifts != 0 {
			t.Errorf("%s: tuning check %+v", rec.CellID, rec.Tuning)
		}
		checkNICDeltas(t, rec, "server lr-srv", "client lr-cli")
	}
	checkLink(t, run.Env, "server lr-srv veth", "client lr-cli veth")
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, f := range strings.Fields(string(out)) {
		if f == srvNS || f == cliNS {
			t.Errorf("namespace %s left after Close:\n%s", f, out)
		}
	}
}

// remoteCampaign runs the session's campaign and checks what only a
// remote placement can get wrong: the server ran on the server host at its
// data address, the agent sampled that host (server threads and its veth),
// the versions resolved there, and Close leaves no server and no agent.
// With link, the campaign calibrated the link (remoteSpec's link) and
// checkLink judges it; without, env.json holds none. whileUp, when given,
// looks at the run before Close.
func remoteCampaign(t *testing.T, l *sshtest.Lab, s *Session, link bool, whileUp func(*sweeps.Run)) *sweeps.Run {
	t.Helper()
	run := runAll(t, s)
	if whileUp != nil {
		whileUp(run)
	}
	for _, rec := range run.Sorted() {
		if rec.Result.Workload.Host != "198.18.0.1" {
			t.Errorf("%s: bench addressed %s, not the server host's data address", rec.CellID, rec.Result.Workload.Host)
		}
		// Sampled: the process and its threads (how busy they were in a
		// short window is the machine's to say).
		if rec.Host == nil || rec.Host.Server == nil || rec.Host.Server.PID <= 0 || len(rec.Host.Server.Threads) == 0 {
			t.Errorf("%s: no server-host metrics from the agent: %+v", rec.CellID, rec.Host)
			continue
		}
		var veth bool
		for _, n := range rec.Host.NICs {
			veth = veth || n.Name == "lr-srv" && n.TxBytes > 0
		}
		if !veth {
			t.Errorf("%s: the agent did not see traffic on the server host's veth: %+v", rec.CellID, rec.Host.NICs)
		}
		var gbps float64
		for _, o := range rec.Result.Ops {
			gbps += o.Gbps
		}
		t.Logf("%s: %.2f Gbps, server main thread %.0f%% busy, limit %s", rec.CellID, gbps, rec.Host.Server.MainBusy*100, rec.Limit.Kind)
		if rec.Version.Resolved == nil || rec.Version.Resolved.Name != "redis" {
			t.Errorf("%s: resolved %+v", rec.CellID, rec.Version.Resolved)
		}
		// Each host's agent read its NIC's driver counters.
		checkNICDeltas(t, rec, "server lr-srv", "client lr-cli")
	}
	if link {
		// The sink ran on the server host, the benches on the client host.
		checkLink(t, run.Env, "server lr-srv veth", "client lr-cli veth")
	} else if checkArch(t, run.Env); run.Env.Link != nil {
		t.Errorf("env.json has a link the campaign did not ask for: %+v", run.Env.Link)
	}
	if len(run.Env.Hosts) != 2 || run.Env.Hosts[0].CPUs < 1 || run.Env.Hosts[0].MinorFaultCost <= 0 {
		t.Errorf("host facts from the agents: %+v", run.Env.Hosts)
	}
	var pids []int
	for _, s := range run.Env.Servers {
		pid, _ := strconv.Atoi(s.Info["process_id"])
		pids = append(pids, pid)
	}
	if len(pids) == 0 {
		t.Fatal("no server recorded")
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatalf("close: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && (alive(pids[len(pids)-1]) || len(agentsRunning(t, l.Pair.Server, l.Pair.Client)) > 0) {
		time.Sleep(100 * time.Millisecond)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("server pid %d still runs after Close", pid)
		}
	}
	if a := agentsRunning(t, l.Pair.Server, l.Pair.Client); len(a) > 0 {
		t.Errorf("agents still run after Close: %q", a)
	}
	return run
}

// remoteSpec is the e2e campaign named name on the given provider, with
// the link calibrated when link says.
func remoteSpec(bin, name, provider string, link bool) string {
	src := strings.Replace(spec(bin), "name: e2e\n", "name: "+name+"\nprovider: "+provider+"\n", 1)
	if link {
		return withLink(src)
	}
	return src
}

// A campaign on an ssh pair: a real sshd in each namespace of a netns pair
// stands for two lab hosts. The agent on the server host starts Debian's
// redis-server (a path there), flushes and samples it; linerate bench runs
// on the client host; the tuning profile is applied on both hosts, checked
// before each cell and reverted; host keys are pinned in the run directory.
func TestRealCampaignOnSSHPair(t *testing.T) {
	t.Parallel()
	bin := redisBinary(t)
	l := sshtest.New(t, "e2e-ssh")
	dir, profiles := t.TempDir(), t.TempDir()
	// nic_address names the NIC by the data address: each host tunes its
	// own veth. somaxconn is per namespace, so the machine is untouched.
	profileIn(t, profiles, "veth", "nic_address: 198.18.0.1\nirqbalance: leave\nqueues: {rx: 1, tx: 1}\nsysctls: {net.core.somaxconn: \"1111\"}\n")
	src := remoteSpec(bin, "e2e-ssh", "{kind: ssh, server: root@198.18.0.1:2222, client: root@198.18.0.2:2222, key: /nonexistent}", true)
	c := parse(t, "e2e-ssh.yaml", "tuning: veth\n"+src)
	before := readSysctl(t, netns.Of(l.Pair.Server).Namespace, "net.core.somaxconn")
	// The campaign's key file does not exist here: the test's provider has
	// the lab's key in memory, as a provider built from settings has it
	// from the file.
	prov := &sshhost.Provider{Server: sshConfig(t, l, l.Pair.Server, "server", ""), Client: sshConfig(t, l, l.Pair.Client, "client", "")}
	s := open(t, c, dir, Options{Provider: prov, Profiles: profiles})
	run := remoteCampaign(t, l, s, true, func(run *sweeps.Run) {
		for _, h := range []infra.Host{l.Pair.Server, l.Pair.Client} {
			if got := readSysctl(t, netns.Of(h).Namespace, "net.core.somaxconn"); got != "1111" {
				t.Errorf("%s: somaxconn %s while the session runs, want 1111", h.Name(), got)
			}
		}
		if snap := string(run.Env.Tuning); !strings.Contains(snap, `"server"`) || !strings.Contains(snap, `"client"`) {
			t.Errorf("tuning snapshot does not name both hosts: %s", snap)
		}
	})
	for _, rec := range run.Sorted() {
		if rec.Tuning == nil || rec.Tuning.Drifts != 0 || !strings.Contains(string(rec.Tuning.Report), `"client"`) {
			t.Errorf("%s: tuning check %+v", rec.CellID, rec.Tuning)
		}
	}
	// Close closed the agents, which reverted their tuning.
	for _, h := range []infra.Host{l.Pair.Server, l.Pair.Client} {
		if got := readSysctl(t, netns.Of(h).Namespace, "net.core.somaxconn"); got != before {
			t.Errorf("%s: somaxconn %s after Close, want %s again", h.Name(), got, before)
		}
	}
	known, _ := os.ReadFile(dir + "/known_hosts")
	if n := strings.Count(string(known), "ssh-ed25519"); n != 2 {
		t.Errorf("known_hosts pins %d keys, want 2:\n%s", n, known)
	}
}

// A campaign on an aws pair against the local EC2/SSM fake, whose two
// instances are the sshd namespaces: the provider's whole Up (placement
// group, security group, key pair, one RunInstances) runs against the
// fake, the cells run over SSH, and after Close the fake's ledger holds no
// live resource.
func TestRealCampaignOnFakeAWSPair(t *testing.T) {
	t.Parallel()
	bin := redisBinary(t)
	l := sshtest.New(t, "e2e-aws")
	f := awsfake.New()
	defer f.Close()
	itype := map[string]string{"amd64": "c7i.large", "arm64": "c8gn.16xlarge"}[runtime.GOARCH]
	dir := t.TempDir()
	src := remoteSpec(bin, "e2e-aws", "{kind: aws, instance-type: "+itype+", region: us-east-1, ssh-from: 203.0.113.7/32}", false)
	src = strings.Replace(src, "  - {binary: "+bin+", label: two-io, io-threads: 2}\n", "", 1)
	c := parse(t, "e2e-aws.yaml", src)
	var set aws.Settings
	if err := c.Provider.Decode(&set); err != nil {
		t.Fatal(err)
	}
	cfg := set.Config(aws.Access{Region: "us-east-1", AccessKeyID: "AKIDFAKEFAKEFAKE", SecretAccessKey: "fake-secret",
		Endpoint: f.URL, MaxBackoff: 5 * time.Millisecond})
	cfg.Poll, cfg.RunningTimeout, cfg.SSHTimeout, cfg.DeleteTimeout = 2*time.Millisecond, time.Second, 5*time.Second, 5*time.Second
	prov, err := aws.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	prov.WaitSSH = func(context.Context, string) error { return nil }
	hosts := []infra.Host{l.Pair.Server, l.Pair.Client}
	prov.Connect = func(ctx context.Context, in aws.Instance, _, known string) (infra.Host, error) {
		h := hosts[in.Index]
		sh, err := sshhost.New(sshConfig(t, l, h, []string{"server", "client"}[in.Index]+" "+in.ID, known))
		if err != nil {
			return nil, err
		}
		return sh, sh.Connect(ctx)
	}
	// The link between the instances is not calibrated here: an aws pair
	// is placed as an ssh pair is (placeRemote, over the same agents), and
	// TestRealCampaignOnSSHPair calibrates that remote link and checks it.
	remoteCampaign(t, l, open(t, c, dir, Options{Provider: prov}), false, nil)
	if live := f.Live(); len(live) > 0 {
		t.Errorf("the fake's ledger holds %d live resources after Close: %+v", len(live), live)
	}
	var instances int
	for _, res := range f.All() {
		if res.Kind == "instance" {
			instances++
		}
	}
	if instances != 2 {
		t.Errorf("%d instances launched, want the pair", instances)
	}
}

// checkNICDeltas: the cell's record holds the driver counters of each
// host's interface ("HOST IFNAME"), read at the window's edges: veth's
// per-queue drops and XDP errors, watched and (here) unmoved.
func checkNICDeltas(t *testing.T, rec *sweeps.CellRecord, want ...string) {
	t.Helper()
	got := map[string]sweeps.NICDelta{}
	for _, d := range rec.NIC {
		got[d.Host+" "+d.Interface] = d
	}
	for _, w := range want {
		d, ok := got[w]
		if !ok {
			t.Errorf("%s: no NIC counters of %s in %+v", rec.CellID, w, rec.NIC)
			continue
		}
		if d.Error != "" || d.Driver != "veth" || d.Counters == nil {
			t.Errorf("%s: %s: %+v", rec.CellID, w, d)
		}
		if _, ok := d.Counters["rx_queue_0_drops"]; !ok {
			b, _ := json.Marshal(rec.NIC)
			t.Errorf("%s: %s: veth's rx_queue_0_drops not among the watched counters %v (%s)", rec.CellID, w, d.Counters, b)
		}
	}
}

// checkLink: env.json holds the link calibrated before the first cell,
// both directions with one connection and with the campaign's count, and
// the interfaces that carried it ("HOST IFNAME DRIVER"); and checkArch's
// architectures.
func checkLink(t *testing.T, env *sweeps.Environment, nics ...string) {
	t.Helper()
	if env == nil || env.Link == nil {
		t.Fatalf("env.json has no link: %+v", env)
	}
	checkArch(t, env)
	l := env.Link
	t.Logf("link: GET %.2f Gbps per flow, %.2f with %d; SET %.2f per flow, %.2f with %d", l.GET.PerFlowGbps, l.GET.Gbps, l.Connections, l.SET.PerFlowGbps, l.SET.Gbps, l.Connections)
	if l.GET.PerFlowGbps <= 0 || l.GET.Gbps <= 0 || l.SET.PerFlowGbps <= 0 || l.SET.Gbps <= 0 || l.Connections < 1 {
		t.Errorf("link figures %+v", l)
	}
	var got []string
	for _, n := range l.NICs {
		got = append(got, n.Host+" "+n.Interface+" "+n.Driver)
		if n.MTU <= 0 {
			t.Errorf("link NIC %+v: no MTU", n)
		}
	}
	if strings.Join(got, ", ") != strings.Join(nics, ", ") {
		t.Errorf("link NICs %v, want %v", got, nics)
	}
}

// checkArch: env.json says what every host's kernel runs on (all of them
// this machine's, as uname says) and what the binary was built for.
func checkArch(t *testing.T, env *sweeps.Environment) {
	t.Helper()
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	machine := unix.ByteSliceToString(u.Machine[:])
	if len(env.Hosts) == 0 {
		t.Errorf("env.json has no hosts")
	}
	for _, h := range env.Hosts {
		if h.Arch != machine {
			t.Errorf("env.json host %q: arch %q, want %q", h.Role, h.Arch, machine)
		}
	}
	if b := env.Linerate; b.GOARCH != runtime.GOARCH || b.GOOS != runtime.GOOS {
		t.Errorf("env.json linerate: goos %q goarch %q, want %s/%s", b.GOOS, b.GOARCH, runtime.GOOS, runtime.GOARCH)
	}
}
