package main

import (
	"testing"
	"time"
)

// Durations in help read as one writes them, not as time.Duration prints.
func TestShortDuration(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{time.Minute, "60s"},
		{15 * time.Second, "15s"},
		{200 * time.Millisecond, "200ms"},
		{1500 * time.Millisecond, "1.5s"},
		{5 * time.Minute, "5m"},
		{15 * time.Minute, "15m"},
		{90 * time.Minute, "1h30m"},
		{4 * time.Hour, "4h"},
		{2*time.Minute + 30*time.Second, "2m30s"},
	} {
		if got := shortDuration(c.d); got != c.want {
			t.Errorf("shortDuration(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}
