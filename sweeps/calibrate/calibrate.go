// Package calibrate measures the link between a pair's hosts before the
// first cell of a campaign (and for `linerate link`): `linerate sink` on
// the server host, `linerate bench` from the client hosts with one
// connection and with the campaign's connection count, GETs and SETs. The
// sink answers as cheaply as a server can, so what the bench gets is the
// link's (and the client's) ceiling, not a server's; the figures go to
// env.json as the link (sweeps.Link), the line Gbps charts draw, and the
// ceiling a cell is labelled link against.
package calibrate

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"time"

	"github.com/linerate/linerate/infra"
	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/fields"
	"github.com/linerate/linerate/sweeps"
)

// Pair is what a calibration runs on.
type Pair struct {
	// Server runs linerate sink on its data address.
	Server infra.Host
	// One runs the bench from the first client host alone; All from every
	// client host together (the cells' bencher; One when there is one).
	One, All sweeps.Bencher
	Clients  int
	// NICs name the interfaces that carry the link, for the record.
	NICs []sweeps.NICSource
	// Log, when set, gets a line per run.
	Log func(format string, args ...any)
}

// SinkStartTimeout bounds the sink's start: the binary is there already
// (the hosts were prepared), so it is up in well under a second.
const SinkStartTimeout = 30 * time.Second

// Measure runs the four benches (1 flow and connections flows, GET and
// SET) against a sink it starts on the server host and stops before it
// returns, whatever happened.
func Measure(ctx context.Context, p Pair, c sweeps.Calibration, connections int) (*sweeps.Link, error) {
	if c.Duration <= 0 {
		d := sweeps.DefaultCalibration()
		c.Warmup, c.Duration = d.Warmup, d.Duration
	}
	if c.ValueSize <= 0 {
		c.ValueSize = sweeps.DefaultCalibrateValueSize
	}
	connections = max(connections, max(p.Clients, 1))
	if p.All == nil {
		p.All = p.One
	}
	sctx, stop := context.WithCancel(ctx)
	port, done, err := startSink(sctx, p.Server, c.ValueSize)
	defer func() {
		stop()
		<-done
	}()
	if err != nil {
		return nil, err
	}
	l := &sweeps.Link{Measured: time.Now().UTC(), Warmup: c.Warmup, Duration: c.Duration, ValueSize: c.ValueSize,
		Connections: connections, Clients: max(p.Clients, 1)}
	for _, run := range []struct {
		b     sweeps.Bencher
		ratio lab.Ratio
		conns int
		into  *float64
	}{
		{p.One, lab.Ratio{Gets: 1}, 1, &l.GET.PerFlowGbps},
		{p.One, lab.Ratio{Sets: 1}, 1, &l.SET.PerFlowGbps},
		{p.All, lab.Ratio{Gets: 1}, connections, &l.GET.Gbps},
		{p.All, lab.Ratio{Sets: 1}, connections, &l.SET.Gbps},
	} {
		w := linkWorkload(p.Server.DataAddr().String(), port, c, run.ratio, run.conns)
		what := fmt.Sprintf("%s with %d connection(s)", opOf(run.ratio), run.conns)
		res, err := run.b.Bench(ctx, w, nil)
		if res == nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if res.Stop.Reason != lab.StopCompleted {
			return nil, fmt.Errorf("%s: %s: %s", what, res.Stop.Reason, res.Stop.Error)
		}
		*run.into = WireGbps(res, opOf(run.ratio))
		if p.Log != nil {
			p.Log("link: %s: %.2f Gbps on the wire", what, *run.into)
		}
	}
	for _, s := range p.NICs {
		info, err := s.NIC(ctx)
		if err != nil {
			l.Problems = append(l.Problems, err.Error())
			continue
		}
		l.NICs = append(l.NICs, sweeps.LinkNIC{Host: info.Host, Interface: info.Interface, Driver: info.Driver, MTU: info.MTU})
	}
	return l, nil
}

// linkWorkload is one calibration bench against the sink at host:port,
// resolved as a cell is, but with a worker thread per connection (up to
// fields.MaxThreads), as iperf3 has a process per flow: the link, not how the
// bench shares a thread among flows, is measured (on a 2-vCPU veth pair 4
// flows on 2 threads read 0.73 of iperf3's GET rate, 0.8-0.9 on 4). And
// two requests in flight per connection, so the link streams as iperf3's
// does: with one, every reply's end drains the pipe before the next
// request leaves, and one flow of 8 MiB GETs read 10.6 Gbit/s where two in
// flight read 13.4 (SETs: 15 and 17; 4 flows alike with either). SET
// bodies are copied (--send copy), as iperf3's are, not spliced as auto
// picks for a cell: splice spares a client CPU, not the link's time, and
// on the netns veth it moved less, alternated 3 rounds of 4 with the sink
// copying: one flow 18.0-28.8 Gbit/s spliced, 26.9-39.4 copied; 4 flows
// 25.6-26.7 spliced, 29.0-32.2 copied, at the same client CPU per GB.
func linkWorkload(host string, port int, c sweeps.Calibration, ratio lab.Ratio, conns int) lab.Workload {
	w := lab.Workload{Host: host, Port: port, Connections: conns, Threads: min(conns, fields.MaxThreads), Pipeline: linkPipeline, Keyspace: sinkKeys,
		ValueSz: lab.OneSize(c.ValueSize), Ratio: ratio, Warmup: c.Warmup, Duration: c.Duration, Verify: lab.VerifyNone, Seed: 1,
		Send: lab.SendCopy}
	return w.Resolve()
}

// linkPipeline is the requests in flight per calibration connection.
const linkPipeline = 2

// sinkKeys is what the sink says it holds: any key of it is a hit.
const sinkKeys = 16

func opOf(r lab.Ratio) lab.Op {
	if r.Gets > 0 {
		return lab.OpGet
	}
	return lab.OpSet
}

// WireGbps is the rate op's payload direction carried on the wire: bytes
// the client received for GETs, sent for SETs, framing included. It is the
// op's payload rate scaled by wire bytes over payload bytes, so a record
// merged from several hosts (rates summed, each over its own window) reads
// as one host's.
func WireGbps(r *lab.Result, op lab.Op) float64 {
	o := r.Ops[op]
	if o == nil || o.PayloadBytes == 0 {
		return 0
	}
	wire := o.WireRecvd
	if op == lab.OpSet {
		wire = o.WireSent
	}
	return o.Gbps * float64(wire) / float64(o.PayloadBytes)
}

// sinkReady is the line the sink writes once it listens.
var sinkReady = regexp.MustCompile(`serving .* values on \S*:(\d+) `)

// startSink starts `linerate sink` on h's data address, on a port the
// kernel picks, and returns the port once it listens. The sink runs until
// ctx ends; done closes when it has.
func startSink(ctx context.Context, h infra.Host, size lab.Size) (port int, done chan struct{}, err error) {
	done = make(chan struct{})
	bin, err := h.Linerate(ctx)
	if err != nil {
		close(done)
		return 0, done, fmt.Errorf("sink on %s: %w", h.Name(), err)
	}
	pr, pw := io.Pipe()
	ended := make(chan error, 1)
	go func() {
		defer close(done)
		err := h.Exec(ctx, infra.Command{Argv: []string{bin, "sink", "--bind", h.DataAddr().String(), "-p", "0",
			"-s", strconv.FormatInt(int64(size), 10), "-n", strconv.Itoa(sinkKeys), "--seed", "1",
			// The link's load, not values: what a server's memory costs
			// its sends is not the link's (the bench reads with
			// --verify none).
			"--link"}, Stderr: pw})
		pw.CloseWithError(io.EOF)
		ended <- err
	}()
	ready := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := sinkReady.FindStringSubmatch(sc.Text()); m != nil {
				n, _ := strconv.Atoi(m[1])
				ready <- n
				break
			}
		}
		io.Copy(io.Discard, pr) // the sink's later lines, until it ends
	}()
	t := time.NewTimer(SinkStartTimeout)
	defer t.Stop()
	select {
	case port = <-ready:
		return port, done, nil
	case err := <-ended:
		if err == nil {
			err = errors.New("ended before it listened")
		}
		return 0, done, fmt.Errorf("sink on %s: %w", h.Name(), err)
	case <-t.C:
		return 0, done, fmt.Errorf("sink on %s: not listening after %v", h.Name(), SinkStartTimeout)
	case <-ctx.Done():
		return 0, done, fmt.Errorf("sink on %s: %w", h.Name(), ctx.Err())
	}
}
