package engine

import (
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/labtest"
)

// One stalled request in a pipeline of 16 GETs of 8 MiB is one timeout
// error, whether it stalls before its reply or in the middle of its
// value: its connection is reset (the stream cannot be resynchronized)
// and the 15 requests queued behind it are cut off (abandoned), not
// timeouts of their own; the new connection carries on.
func TestOneStalledRequestIsOneTimeout(t *testing.T) {
	t.Parallel()
	// The healthy replies must never time out, however loaded the
	// machine: 8 MiB against a 2 s timeout is 4 MB/s (64 MiB against 1 s
	// timed out a second request on a loaded CI machine).
	const size = 8 << 20
	const timeout = 2 * time.Second
	layout := lab.NewValueLayout(size, 3)
	for _, tc := range []struct {
		name  string
		after int64 // bytes of the stalled reply written before the stall
	}{
		{name: "before its reply", after: 0},
		{name: "in the middle of its value", after: size / 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := labtest.StartPeer(t, func(n int, args [][]byte, w io.Writer) error {
				id, _ := lab.ParseKeyID(args[1])
				stall := int64(-1)
				if n == 4 { // the fifth GET, behind four answered ones
					stall = tc.after
				}
				return writeValue(w, layout, id, stall, 2*timeout)
			})
			w := lab.Workload{Host: "127.0.0.1", Port: p.Port, Connections: 1, Pipeline: 16, Threads: 1, Keyspace: 8,
				ValueSz: lab.OneSize(size), Seed: 3, Duration: lab.Duration(2*timeout + time.Second), RequestTimeout: lab.Duration(timeout)}
			w = w.Resolve()
			res := measureOnce(t, w)
			if res.Errors[lab.ErrTimeout] != 1 || len(res.Errors) != 1 {
				t.Fatalf("errors %v: want exactly one timeout", res.Errors)
			}
			if res.Abandoned != 15 {
				t.Errorf("%d requests abandoned, want the 15 behind the one that timed out", res.Abandoned)
			}
			if res.Ops[lab.OpGet].Ops == 0 {
				t.Error("no requests after the reconnect")
			}
		})
	}
}

// writeValue writes key's GET reply from the layout's shared body (no
// 64 MiB copy per reply); with stall >= 0 it writes that many bytes of the
// value, waits d, then the rest.
func writeValue(w io.Writer, l *lab.ValueLayout, key uint32, stall int64, d time.Duration) error {
	var hdr [lab.ValueHeaderLen]byte
	var tail [lab.ValueTrailerLen + 2]byte
	l.PutHeader(hdr[:], key, 0)
	l.PutTrailer(tail[:lab.ValueTrailerLen], key, 0)
	tail[lab.ValueTrailerLen], tail[lab.ValueTrailerLen+1] = '\r', '\n'
	parts := [][]byte{[]byte("$" + strconv.FormatInt(l.Size, 10) + "\r\n"), hdr[:], l.Body[lab.ValueHeaderLen : l.Size-lab.ValueTrailerLen], tail[:]}
	if stall == 0 {
		time.Sleep(d)
	}
	var off int64 = -int64(len(parts[0])) // value bytes written so far
	for _, b := range parts {
		if stall > 0 && off < stall && off+int64(len(b)) > stall {
			k := stall - off
			if _, err := w.Write(b[:k]); err != nil {
				return err
			}
			time.Sleep(d)
			b, off = b[k:], stall
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		off += int64(len(b))
	}
	return nil
}
