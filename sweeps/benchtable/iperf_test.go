package benchtable

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"time"
)

// commander makes the command that runs argv on one host: this one, or a
// namespace of a netns pair (netns.Host.Command).
type commander func(ctx context.Context, argv ...string) *exec.Cmd

// here runs argv on this machine, killed when ctx ends.
func here(ctx context.Context, argv ...string) *exec.Cmd {
	return exec.CommandContext(ctx, argv[0], argv[1:]...)
}

// iperf3Gbps runs one iperf3 test of d: a one-off server (-1) started by
// srv on addr:port, a client started by cli with flows streams (-P; 3.16+
// gives each a thread, as the bench gives each connection one),
// TCP_NODELAY (-N) as the bench and the sink set it, the first second
// left out (-O 1) as a warmup is, and reverse (-R) when the bytes flow
// from server to client as GETs' do. It returns the receiver's Gbps.
func iperf3Gbps(iperf string, srv, cli commander, addr string, port, flows int, reverse bool, d time.Duration) (float64, error) {
	args := []string{"-N", "-O", "1", "-P", strconv.Itoa(flows)}
	if reverse {
		args = append(args, "-R")
	}
	out, err := iperf3Test(iperf, srv, cli, addr, port, d, args...)
	if err != nil {
		return 0, err
	}
	var r struct {
		End struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	if err := json.Unmarshal(out, &r); err != nil || r.End.SumReceived.BitsPerSecond <= 0 {
		return 0, fmt.Errorf("iperf3: no rate in %.300s", out)
	}
	return r.End.SumReceived.BitsPerSecond / 1e9, nil
}

// iperf3Test runs one iperf3 test of d with args: a one-off server (-1)
// started by srv on addr:port, a client started by cli; it returns the
// client's JSON (-J).
func iperf3Test(iperf string, srv, cli commander, addr string, port int, d time.Duration, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	p := strconv.Itoa(port)
	server := srv(ctx, iperf, "-s", "-1", "-B", addr, "-p", p)
	if err := server.Start(); err != nil {
		return nil, fmt.Errorf("iperf3 server: %w", err)
	}
	defer func() {
		cancel()
		_ = server.Wait()
	}()
	if err := listening(ctx, srv, port); err != nil {
		return nil, err
	}
	argv := append([]string{iperf, "-c", addr, "-p", p, "-J", "-t", strconv.Itoa(int(d.Seconds()))}, args...)
	out, err := cli(ctx, argv...).Output()
	if err != nil {
		return nil, fmt.Errorf("iperf3 client %v: %v: %.300s", args, err, out)
	}
	return out, nil
}

// listening waits until something listens on port where on runs its
// commands (a probe connection would be taken for a test by a one-off
// iperf3 server).
func listening(ctx context.Context, on commander, port int) error {
	for try := 0; try < 100; try++ {
		if out, _ := on(ctx, "ss", "-ltnH", "sport = :"+strconv.Itoa(port)).Output(); len(out) > 0 {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("nothing listens on port %d after 5 s", port)
}
