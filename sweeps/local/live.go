package local

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"

	"github.com/linerate/linerate/lab"
)

// LiveLinePrefix starts each line `linerate bench --live-json` writes to
// stderr: one lab.Live as JSON.
const LiveLinePrefix = "live "

// liveWriter splits a remote bench's stderr: live lines go to live, the
// rest to rest (kept for error messages).
type liveWriter struct {
	live func(*lab.Live)
	rest io.Writer
	mu   sync.Mutex
	buf  []byte
}

func (w *liveWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		line := w.buf[:i+1]
		if rest, ok := bytes.CutPrefix(line, []byte(LiveLinePrefix)); ok {
			var l lab.Live
			if json.Unmarshal(rest, &l) == nil {
				w.live(&l)
			}
		} else {
			_, _ = w.rest.Write(line)
		}
		w.buf = w.buf[i+1:]
	}
	// A line longer than any tick is not one: pass it on as it is.
	if len(w.buf) > 1<<20 {
		_, _ = w.rest.Write(w.buf)
		w.buf = w.buf[:0]
	}
	return len(p), nil
}
