package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/linerate/linerate/lab"
)

// LiveLinePrefix starts each line `linerate bench --live-json` writes to
// stderr: one lab.Live as JSON.
const LiveLinePrefix = "live "

// LiveLines writes each tick as one line on w (`bench --live-json`), for
// a coordinator that runs the bench on another host: SplitLive reads
// them back.
func LiveLines(w io.Writer) func(*lab.Live) {
	var mu sync.Mutex
	return func(l *lab.Live) {
		b, err := json.Marshal(l)
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "%s%s\n", LiveLinePrefix, b)
	}
}

// SplitLive is what a coordinator hands a remote bench's stderr: each
// live line (LiveLines) goes to live as one tick, the rest to rest (kept
// for error messages).
func SplitLive(live func(*lab.Live), rest io.Writer) io.Writer {
	return &liveWriter{live: live, rest: rest}
}

// liveWriter is SplitLive's writer.
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
