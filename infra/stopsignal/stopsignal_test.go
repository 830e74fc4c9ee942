package stopsignal

import (
	"testing"
	"time"
)

// The first stop signal stops; a second never abandons the teardown, it
// opens a 10 s window in which a third does; a window that closes unused
// is forgotten.
func TestSignalPolicy(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name string
		at   []time.Duration // when each signal comes
		want []signalAction
	}{
		{"one", []time.Duration{0}, []signalAction{actStop}},
		{"two at once", []time.Duration{0, 0}, []signalAction{actStop, actWarn}},
		{"three at once", []time.Duration{0, 0, 0}, []signalAction{actStop, actWarn, actAbandon}},
		{"third within the window", []time.Duration{0, 5 * s, 15 * s}, []signalAction{actStop, actWarn, actAbandon}},
		{"third after the window", []time.Duration{0, 5 * s, 16 * s}, []signalAction{actStop, actWarn, actWarn}},
		{"then one within the new window", []time.Duration{0, 5 * s, 16 * s, 17 * s}, []signalAction{actStop, actWarn, actWarn, actAbandon}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := signalPolicy{window: 10 * s}
			t0 := time.Unix(1e9, 0)
			for i, d := range tc.at {
				if got := p.on(t0.Add(d)); got != tc.want[i] {
					t.Errorf("signal %d at %v: action %d, want %d", i+1, d, got, tc.want[i])
				}
			}
		})
	}
}
