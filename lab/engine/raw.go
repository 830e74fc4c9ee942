package engine

import (
	"fmt"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/lab"
)

// The raw engine: each worker is one OS thread, optionally pinned, running
// its own epoll loop over its share of the connections. Everything a worker
// touches on the hot path is its own; the coordinator reads the workers'
// state only after they stop (plus its live counters, live.go).
//
// newEngine opens the raw engine's connections and spreads them over its
// workers.
func newEngine(w lab.Workload) (*engine, error) {
	e := &engine{w: w, layout: lab.NewValueLayout(int64(w.ValueSz.Max()), w.Seed)}
	// Workers block in epoll_wait; each needs a P to run when it wakes, so
	// never let GOMAXPROCS be the queue they wait in.
	if runtime.GOMAXPROCS(0) < w.Threads+1 {
		runtime.GOMAXPROCS(w.Threads + 1)
	}
	auth := authCommand(w)
	for i := 0; i < w.Threads; i++ {
		epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			e.shutdown()
			return nil, fmt.Errorf("epoll create: %w", err)
		}
		wk := e.newWorker(i)
		wk.auth, wk.epfd = auth, epfd
		wk.noTrunc = os.Getenv("LINERATE_NO_MSG_TRUNC") == "1"
		wk.scratch = make([]byte, scratchSize)
		for j := range wk.scratch { // fault the pages in now
			wk.scratch[j] = 0xff
		}
		e.workers = append(e.workers, wk)
	}
	for i := 0; i < w.Connections; i++ {
		wk := e.workers[i%w.Threads]
		fd, err := dialRaw(w.Addr(), 5*time.Second)
		if err == nil && auth != nil {
			if err = authRaw(fd, auth); err != nil {
				unix.Close(fd)
			}
		}
		if err != nil {
			e.shutdown()
			return nil, fmt.Errorf("open connection %d to %s: %w", i, w.Addr(), err)
		}
		c := &rconn{
			fd: -1, index: i, wk: wk, ch: newChooser(&w, i, w.Connections),
			cmd:  make([]byte, 0, 64+2*w.KeySize),
			q:    make([]req, w.Pipeline),
			rbuf: make([]byte, recvBufSize),
		}
		wk.conns = append(wk.conns, c)
		e.choosers = append(e.choosers, &c.ch)
		if err := wk.register(c, fd); err != nil {
			unix.Close(fd)
			e.shutdown()
			return nil, err
		}
	}
	return e, nil
}
