package engine

import (
	"crypto/tls"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/internal/rawsock"
)

const (
	recvBufSize = 8 << 10   // reply headers, value headers and trailers
	scratchSize = 256 << 10 // --verify full, and the no-MSG_TRUNC fallback
	epollTick   = 50 * time.Millisecond
	stopGrace   = 2 * time.Second
)

// schedule is the run's timeline, fixed before the workers start.
type schedule struct {
	base        time.Time // every timestamp is nanoseconds since base
	warmupEnd   int64
	measureEnd  int64
	drainEnd    int64 // in-flight requests still open then are abandoned
	seconds     int   // length of the per-second series
	prefillMode bool
	// Open loop: when the probe's idle latency is measured from (the
	// warmup's first quarter settles its connections) and when the main
	// load starts (after the probe's idle phase, lab.Workload.ProbePhases;
	// 0 without a probe), and a ramp's step length and count (0 without a
	// ramp; its steps are the window).
	idleStart int64
	mainStart int64
	stepLen   int64
	steps     int
}

// Phase indexes, in the order of phaseOrder.
const (
	phPrefill = iota
	phWarmup
	phMeasure
	phDrain
)

var phaseOrder = [4]lab.Phase{lab.PhasePrefill, lab.PhaseWarmup, lab.PhaseMeasure, lab.PhaseDrain}

// phaseAt is the phase a request completing at t belongs to.
func (s *schedule) phaseAt(t int64) int {
	switch {
	case s.prefillMode:
		return phPrefill
	case t < s.warmupEnd:
		return phWarmup
	case t < s.measureEnd:
		return phMeasure
	}
	return phDrain
}

// worker owns a thread, an epoll instance and its connections.
type worker struct {
	id      int
	cpu     int // -1 when not pinned
	w       *lab.Workload
	layout  *lab.ValueLayout
	mix     *lab.SizeMix
	sched   *schedule
	stop    *atomic.Bool // set by the coordinator on Ctrl-C
	addr    string
	auth    []byte      // AUTH command to replay after a reconnect, or nil
	tlsCfg  *tls.Config // the data connections' TLS (tls.go); nil: plain TCP
	epfd    int
	conns   []*rconn
	scratch []byte
	noTrunc bool
	send    sendPlan // SET bodies: copy, splice or zerocopy, and the call bound (send.go)

	measure   [2]opStats
	phases    [4]phaseStats
	abandoned uint64
	dead      int

	// Live counts, read by the coordinator's tick while the run goes on.
	live liveWorker

	open     openStats // open loop, size classes, the probe (openstats.go)
	probe    bool      // the probe's own worker: not one of -t
	paced    bool      // some unit of the stage has a pacer that waits
	noPwait2 bool      // the kernel has no epoll_pwait2

	vk *vkState // the valkey-go engine's state; nil for the raw engine

	// A cluster (bench --cluster; cluster.go): the route, this worker's
	// own slot table (node index per slot, updated by MOVED), its side
	// connections for redirected requests, and redirects by phase, op
	// and kind. All nil/zero otherwise.
	route *route
	owner []int16
	side  map[string]*sideConn
	redir [4][2][2]uint64

	usageStart, usageEnd threadUsage
	usageState           int // 0 before the window, 1 inside, 2 after
	stopSeen             int64
	err                  error
}

func (w *worker) now() int64 { return int64(time.Since(w.sched.base)) }

// run is the worker's loop. It returns when every connection has drained
// or died, or the drain deadline passed.
func (w *worker) run() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if w.cpu >= 0 {
		if err := pinThread(w.cpu); err != nil {
			w.err = err
			return
		}
	}
	events := make([]unix.EpollEvent, len(w.conns)+1)
	for _, c := range w.conns {
		c.fill(w.now())
	}
	for {
		t := w.now()
		w.trackUsage(t)
		if w.finished(t) {
			break
		}
		w.checkTimeouts(t)
		wait := epollTick
		if w.paced {
			wait = w.untilDue(t, epollTick)
		}
		n, err := rawsock.EpollWait(w.epfd, events, wait, &w.noPwait2)
		if err != nil && err != unix.EINTR {
			w.err = fmt.Errorf("epoll wait: %w", err)
			break
		}
		for i := 0; i < n; i++ {
			c := w.conns[events[i].Pad]
			if c.dead {
				continue
			}
			ev := events[i].Events
			if ev&(unix.EPOLLIN|unix.EPOLLERR|unix.EPOLLHUP|unix.EPOLLRDHUP) != 0 {
				if err := c.onReadable(); err != nil {
					c.fail(err)
					continue
				}
			}
			if ev&unix.EPOLLOUT != 0 {
				if err := c.onWritable(w.now()); err != nil {
					c.fail(err)
					continue
				}
			}
			c.fill(w.now())
		}
		if w.paced {
			// A connection whose pacer's wait is over sends if it has
			// a free slot.
			now := w.now()
			for _, c := range w.conns {
				if c.dueAt != 0 && now >= c.dueAt {
					c.fill(now)
				}
			}
		}
	}
	if w.usageState == 1 {
		w.usageEnd = getUsage(unix.RUSAGE_THREAD)
		w.usageState = 2
	}
	// Requests still open now were cut off by the end of the run, not
	// failed by the server: count them apart. Their connections carry
	// half-read replies, so they cannot serve another stage.
	for _, c := range w.conns {
		if !c.dead && (c.qLen > 0 || c.sending) {
			c.abandon()
			c.close()
			c.dead = true
			w.dead++
		}
	}
}

// shutdown closes the worker's sockets and epoll instance.
func (w *worker) shutdown() {
	for _, c := range w.conns {
		c.close()
		c.bs.close()
	}
	w.closeSide()
	if w.epfd >= 0 {
		unix.Close(w.epfd)
		w.epfd = -1
	}
}

func (w *worker) trackUsage(t int64) {
	if w.sched.prefillMode {
		return
	}
	if w.usageState == 0 && t >= w.sched.warmupEnd {
		w.usageStart = getUsage(unix.RUSAGE_THREAD)
		w.usageState = 1
	}
	if w.usageState == 1 && t >= w.sched.measureEnd {
		w.usageEnd = getUsage(unix.RUSAGE_THREAD)
		w.usageState = 2
	}
}

// issuing says whether new requests may start at t.
func (w *worker) issuing(t int64) bool {
	if w.stop.Load() {
		return false
	}
	return w.sched.prefillMode || t < w.sched.measureEnd
}

func (w *worker) finished(t int64) bool {
	if t >= w.sched.drainEnd {
		return true
	}
	if w.stop.Load() {
		// Interrupted: give replies in flight a short grace, not the
		// whole request timeout.
		if w.stopSeen == 0 {
			w.stopSeen = t
		}
		if t-w.stopSeen > int64(stopGrace) {
			return true
		}
	}
	for _, c := range w.conns {
		if c.dead {
			continue
		}
		if c.qLen > 0 || c.sending {
			return false
		}
		if !c.stopped && w.issuing(t) && c.wantsMore() {
			return false
		}
	}
	return true
}

func (w *worker) checkTimeouts(t int64) {
	limit := int64(w.w.RequestTimeout)
	for _, c := range w.conns {
		if c.dead || c.qLen == 0 {
			continue
		}
		if t-c.deadlineStart() > limit {
			c.timeOut(t)
		}
	}
}
