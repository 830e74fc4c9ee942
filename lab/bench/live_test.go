package bench

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/linerate/linerate/lab"
)

// A remote bench's stderr arrives in pieces of any size: live lines are
// decoded whole, everything else is kept for the error message.
func TestLiveWriterSplitsStderr(t *testing.T) {
	tick, _ := json.Marshal(&lab.Live{Phase: lab.PhaseMeasure, Counts: []lab.LiveCount{{Phase: lab.PhaseMeasure, Op: lab.OpGet, OK: 7}}})
	stream := "warning: something\n" + LiveLinePrefix + string(tick) + "\n" + LiveLinePrefix + "{not json\n" + "linerate bench: done\n" + LiveLinePrefix + string(tick) + "\n"
	for _, step := range []int{1, 3, 64, len(stream)} {
		var got []*lab.Live
		var rest bytes.Buffer
		w := &liveWriter{live: func(l *lab.Live) { got = append(got, l) }, rest: &rest}
		for i := 0; i < len(stream); i += step {
			if _, err := w.Write([]byte(stream[i:min(i+step, len(stream))])); err != nil {
				t.Fatal(err)
			}
		}
		if len(got) != 2 || got[0].Count(lab.PhaseMeasure, lab.OpGet).OK != 7 {
			t.Errorf("step %d: ticks %+v", step, got)
		}
		if rest.String() != "warning: something\nlinerate bench: done\n" {
			t.Errorf("step %d: rest %q", step, rest.String())
		}
	}
}

// What LiveLines writes, the liveWriter reads back tick for tick.
func TestLiveLinesRoundTrip(t *testing.T) {
	var got []*lab.Live
	var rest bytes.Buffer
	w := &liveWriter{live: func(l *lab.Live) { got = append(got, l) }, rest: &rest}
	write := LiveLines(w)
	for ok := uint64(1); ok <= 3; ok++ {
		write(&lab.Live{Phase: lab.PhaseMeasure, Counts: []lab.LiveCount{{Phase: lab.PhaseMeasure, Op: lab.OpSet, OK: ok}}})
	}
	if len(got) != 3 || got[2].Count(lab.PhaseMeasure, lab.OpSet).OK != 3 || rest.Len() != 0 {
		t.Fatalf("read back %d ticks (%+v), rest %q", len(got), got, rest.String())
	}
}
