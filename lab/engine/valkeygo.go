package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/fields"
)

// The valkey-go engine is a general client driving the same workload, to
// cross-check the raw engine's figures. It copies every reply into memory
// and builds a whole value per worker, so it is not the instrument: it is
// the second opinion. Each (connection, pipeline slot) is one worker
// goroutine with synchronous calls; valkey-go pipelines the slots of one
// connection onto its socket.

func newValkeyGoEngine(w lab.Workload) (*engine, error) {
	e := &engine{w: w, layout: lab.NewValueLayout(int64(w.ValueSz.Max()), w.Seed), kind: valkeyGoKind{}}
	if _, one := w.ValueSz.Single(); !one {
		e.mix = &e.w.ValueSz
	}
	tlsCfg, err := fields.TLSConfig(w.TLS, w.Host)
	if err != nil {
		return nil, err
	}
	clients := make([]valkey.Client, w.Connections)
	for i := range clients {
		c, err := valkey.NewClient(valkey.ClientOption{
			InitAddress: []string{w.Addr()}, Username: w.User, Password: w.Password,
			DisableCache: true, ForceSingleClient: true, AlwaysRESP2: true,
			// One TCP connection per -c, as the raw engine: left at its
			// default, valkey-go multiplexes up to four per client.
			PipelineMultiplex: -1,
			Dialer:            net.Dialer{Timeout: 5 * time.Second},
			ConnWriteTimeout:  w.RequestTimeout.D(),
			DisableRetry:      true, // a retried request would be counted twice
			TLSConfig:         tlsCfg,
		})
		if err != nil {
			e.shutdown()
			return nil, fmt.Errorf("valkey-go connection %d to %s: %w", i, w.Addr(), err)
		}
		clients[i] = c
		e.closers = append(e.closers, c.Close)
	}
	units := w.Connections * w.Pipeline
	for i := 0; i < units; i++ {
		wk := e.newWorker(i)
		wk.vk = &vkState{client: clients[i/w.Pipeline], ch: newChooser(&w, i, units)}
		e.workers = append(e.workers, wk)
		e.choosers = append(e.choosers, &wk.vk.ch)
	}
	return e, nil
}

// vkState is a valkey-go worker's own state.
type vkState struct {
	client valkey.Client
	ch     chooser
	gen    uint64
	value  []byte // a whole value of the largest size, patched per SET
	pacing
}

func (w *worker) runValkeyGo() {
	v := w.vk
	wl := w.w
	if v.value == nil {
		v.value = w.layout.Full(0, 0)
	}
	for {
		t := w.now()
		if !w.issuing(t) || v.stopped || (w.sched.prefillMode && v.ch.prefilled()) {
			return
		}
		if !v.due(w, t) {
			if v.dueAt != 0 {
				time.Sleep(w.untilDue(t, epollTick))
			}
			continue
		}
		op, key := v.ch.next(w.sched.prefillMode)
		name := lab.KeyName(key, wl.KeySize)
		size := sizeFor(w.layout, w.mix, key)
		r := req{op: op, key: key, issued: t, sentAt: t, size: size, class: classFor(w.mix, size)}
		if r.intended, r.paced = v.started(); r.paced {
			w.issuedPaced(r.intended, t, false)
		}
		ctx, cancel := context.WithTimeout(context.Background(), wl.RequestTimeout.D())
		kind, miss := ok, false
		var in uint64
		if op == opSet {
			v.gen++
			gen := uint64(w.id)<<40 | v.gen
			l := w.layout.Prefix(size)
			if size >= lab.MinVerifiableSize {
				l.PutHeader(v.value, key, gen)
				l.PutTrailer(v.value[size-lab.ValueTrailerLen:], key, gen)
			}
			r.wireOut = uint64(len(appendSetHeader(nil, key, wl.KeySize, size))) + uint64(size) + 2
			err := v.client.Do(ctx, v.client.B().Set().Key(name).Value(valkey.BinaryString(v.value[:size])).Build()).Error()
			if size >= lab.MinVerifiableSize {
				// A longer value later has the pattern where this trailer is.
				copy(v.value[size-lab.ValueTrailerLen:size], w.layout.Body[size-lab.ValueTrailerLen:size])
			}
			kind = classifyClientErr(err)
			in = 5 // +OK\r\n
		} else {
			r.wireOut = uint64(len(appendGet(nil, key, wl.KeySize)))
			b, err := v.client.Do(ctx, v.client.B().Get().Key(name).Build()).AsBytes()
			switch {
			case valkey.IsValkeyNil(err):
				in = 5 // $-1\r\n
				if wl.Prefill {
					kind = eNilPrefill
				} else {
					miss = true
				}
			case err != nil:
				kind = classifyClientErr(err)
			default:
				in = uint64(len(b)+2) + uint64(len(strconv.Itoa(len(b)))+3)
				kind = w.checkValue(b, key, size)
			}
		}
		cancel()
		done := w.now()
		r.firstAt = 0 // valkey-go does not expose the first reply byte
		w.record(&r, kind, miss, done, in)
		if kind == eConn {
			w.dead = len(w.conns) + 1
			if w.err == nil {
				w.err = errors.New("valkey-go: connection failed")
			}
			return
		}
	}
}

// checkValue verifies a whole value held in memory.
func (w *worker) checkValue(b []byte, key uint32, size int64) errIdx {
	if int64(len(b)) != size {
		return eWrongLength
	}
	l := w.layout.Prefix(size)
	if w.w.Verify == lab.VerifyNone || l.Size < lab.MinVerifiableSize {
		return ok
	}
	if _, good := l.CheckEnds(b[:lab.ValueHeaderLen], b[l.Size-lab.ValueTrailerLen:], key); !good {
		return eBadContent
	}
	if w.w.Verify == lab.VerifyFull && !l.CheckBody(0, b) {
		return eBadContent
	}
	return ok
}

func classifyClientErr(err error) errIdx {
	var verr *valkey.ValkeyError
	switch {
	case err == nil:
		return ok
	case errors.As(err, &verr):
		return eServer
	case errors.Is(err, context.DeadlineExceeded):
		return eTimeout
	}
	return eConn
}
