package engine

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/fields"
)

// The raw engine: each worker is one OS thread, optionally pinned, running
// its own epoll loop over its share of the connections. Everything a worker
// touches on the hot path is its own; the coordinator reads the workers'
// state only after they stop (plus its live counters, live.go).
//
// newEngine opens the raw engine's connections and spreads them over its
// workers.
func newEngine(w lab.Workload) (*engine, error) { return newRoutedEngine(w, nil) }

// newRoutedEngine is newEngine against a cluster when rt is set: each
// connection goes to its node (cluster.go).
func newRoutedEngine(w lab.Workload, rt *route) (*engine, error) {
	tlsCfg, err := fields.TLSConfig(w.TLS, w.Host)
	if err != nil {
		return nil, err
	}
	// A cluster's nodes are judged by the seed's address: one host's
	// cluster is all loopback, a remote one all remote.
	send, err := chooseSend(w.Send, tlsCfg != nil, hostLocal(w.Host, net.InterfaceAddrs))
	if err != nil {
		return nil, err
	}
	e := &engine{w: w, layout: lab.NewValueLayout(int64(w.ValueSz.Max()), w.Seed), route: rt, kind: rawKind{send: send}}
	if _, one := w.ValueSz.Single(); !one {
		e.mix = &e.w.ValueSz
	}
	threads := w.Threads
	if !w.Probe.IsZero() {
		// The probe has a worker of its own, so its latency is not the
		// main load's workers being busy.
		e.probeLayout = lab.NewValueLayout(int64(w.Probe.Size), w.Seed)
		threads++
	}
	// Workers block in epoll_wait; each needs a P to run when it wakes, so
	// never let GOMAXPROCS be the queue they wait in.
	if runtime.GOMAXPROCS(0) < threads+1 {
		runtime.GOMAXPROCS(threads + 1)
	}
	auth := authCommand(w)
	for i := 0; i < threads; i++ {
		epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			e.shutdown()
			return nil, fmt.Errorf("epoll create: %w", err)
		}
		wk := e.newWorker(i)
		wk.auth, wk.epfd = auth, epfd
		// Under TLS every byte is decrypted in user space: no MSG_TRUNC.
		wk.noTrunc = os.Getenv("LINERATE_NO_MSG_TRUNC") == "1" || tlsCfg != nil
		wk.tlsCfg, wk.send = tlsCfg, send
		wk.scratch = make([]byte, scratchSize)
		for j := range wk.scratch { // fault the pages in now
			wk.scratch[j] = 0xff
		}
		if i == w.Threads {
			wk.probe, wk.cpu = true, -1
		}
		if rt != nil {
			wk.route, wk.owner = rt, append([]int16(nil), rt.m.Owner[:]...)
		}
		e.workers = append(e.workers, wk)
	}
	for i := 0; i < w.Connections; i++ {
		var c *rconn
		if rt != nil {
			c = e.newConn(e.workers[i%w.Threads], i, i, w.Pipeline, rt.clusterChooser(&w, i, w.Connections))
			c.node = i % rt.nodes()
			c.addr = rt.m.Nodes[c.node].Addr
		} else {
			c = e.newConn(e.workers[i%w.Threads], i, i, w.Pipeline, newChooser(&w, i, w.Connections))
		}
		c.pattern, c.mix = e.layout, e.mix
		if err := e.dial(c); err != nil {
			return nil, err
		}
	}
	if e.probeLayout != nil {
		for i := 0; i < lab.ProbeConnections; i++ {
			// One request in flight each: a probe GET waits for its
			// connection only behind another probe GET.
			c := e.newConn(e.workers[w.Threads], w.Connections+i, i, 1, newProbeChooser(&w, i))
			c.pattern, c.probe = e.probeLayout, true
			if err := e.dial(c); err != nil {
				return nil, err
			}
		}
	}
	return e, nil
}

// newConn makes connection index of wk, the unit-th of its kind, with
// depth requests in flight at most.
func (e *engine) newConn(wk *worker, index, unit, depth int, ch chooser) *rconn {
	c := &rconn{
		fd: -1, index: index, unit: unit, wk: wk, ch: ch, addr: e.w.Addr(), ref: -1,
		cmd:  make([]byte, 0, 64+2*e.w.KeySize),
		q:    make([]req, depth),
		rbuf: make([]byte, recvBufSize),
		iov:  make([]unix.Iovec, 4),
	}
	if e.w.Command.Multi() && !c.probe {
		c.initMulti(e.w.KeysPerOp, e.w.KeySize)
	}
	wk.conns = append(wk.conns, c)
	e.choosers = append(e.choosers, &c.ch)
	return c
}

// dial connects c and registers it with its worker; on failure it shuts
// the engine down.
func (e *engine) dial(c *rconn) error {
	if err := c.bs.open(c.wk.send.mode); err != nil {
		e.shutdown()
		return err
	}
	fd, s, err := dialConn(c.addr, 5*time.Second, c.wk.tlsCfg, c.wk.auth)
	if err != nil {
		e.shutdown()
		return fmt.Errorf("open connection %d to %s: %w", c.index, c.addr, err)
	}
	c.tls = s
	if err := c.wk.register(c, fd); err != nil {
		unix.Close(fd)
		c.fd, c.tls = -1, nil
		e.shutdown()
		return err
	}
	return nil
}
