package engine

import (
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/linerate/linerate/lab"
)

const (
	opGet = 0
	opSet = 1
)

var opNames = [2]lab.Op{lab.OpGet, lab.OpSet}

var errorKinds = []lab.ErrorKind{lab.ErrWrongLength, lab.ErrBadContent, lab.ErrNilPrefill, lab.ErrServer, lab.ErrProtocol, lab.ErrTimeout, lab.ErrConnReset}

type errIdx int8

const (
	ok errIdx = iota - 1
	eWrongLength
	eBadContent
	eNilPrefill
	eServer
	eProtocol
	eTimeout
	eConn
	numErrKinds
)

type secStat struct{ ops, bytes, errors uint64 }

// opStats is one operation's figures in the measured window, per worker.
type opStats struct {
	lat, ttfb      *hdr.Histogram
	clamped        uint64
	ops, payload   uint64
	wireOut        uint64
	wireIn         uint64
	misses         uint64
	checked, fails uint64
	errs           [numErrKinds]uint64
	series         []secStat
	secLat         []uint32 // len(series) x LatBuckets counts
}

type phaseStats struct {
	ops             [2]uint64
	wireOut, wireIn uint64
	errs            [numErrKinds]uint64
}

// req is one request in flight.
type req struct {
	op       int
	key      uint32
	issued   int64
	sentAt   int64
	firstAt  int64
	intended int64 // when the schedule meant it to go (paced only)
	size     int64 // its value's size
	wireOut  uint64
	class    int16 // its size class in a mix; -1 for one size
	paced    bool
	probe    bool
	multi    bool // an MGET or MSET: its keys are its connection's slotKeys
}

// record files one finished request under the phase it finished in. Only
// requests that complete inside the measured window count as throughput,
// and their bytes are counted once, here. A paced request's latency runs
// from its intended send time; its service time from its actual send.
func (w *worker) record(r *req, kind errIdx, miss bool, t int64, wireIn uint64) {
	phase := w.sched.phaseAt(t)
	ps := &w.phases[phase]
	ps.ops[r.op]++
	ps.wireOut += r.wireOut
	ps.wireIn += wireIn
	if kind != ok {
		ps.errs[kind]++
	}
	sent := r.sentAt
	if sent == 0 {
		sent = r.issued
	}
	from := sent
	if r.paced {
		from = r.intended
	}
	if r.probe { // not the main load: the probe's own figures only
		w.recordProbe(r, kind, miss, t, from, sent)
		return
	}
	w.live.add(phase, r.op, kind, miss, t-from, r.size)
	w.settled(r, kind)
	if r.paced {
		w.recordStep(r, kind, miss, t, from, sent)
	}
	if phase != phMeasure {
		return
	}
	st := &w.measure[r.op]
	st.wireOut += r.wireOut
	st.wireIn += wireIn
	sec := min(int((t-w.sched.warmupEnd)/int64(time.Second)), len(st.series)-1)
	if r.op == opGet {
		st.checked++
		if kind == eWrongLength || kind == eBadContent {
			st.fails++
		}
	}
	if kind != ok {
		st.errs[kind]++
		st.series[sec].errors++
		w.recordClass(r, kind, 0)
		return
	}
	if miss {
		st.misses++
		return
	}
	if lab.RecordUs(st.lat, t-from) {
		st.clamped++
	}
	if r.paced {
		lab.RecordUs(w.open.service[r.op], t-sent)
	}
	st.secLat[sec*lab.LatBuckets+lab.LatBucket((t-from)/1000)]++
	if r.op == opGet && r.firstAt > 0 {
		lab.RecordUs(st.ttfb, r.firstAt-sent)
	}
	w.recordClass(r, ok, t-from)
	size := uint64(r.size)
	st.ops++
	st.payload += size
	st.series[sec].ops++
	st.series[sec].bytes += size
}
