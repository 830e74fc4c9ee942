package pace

import (
	"errors"
	"fmt"
	"time"
)

// Chain runs schedules back to back from its start: the engine's warmup at
// a ramp's first rate followed by the ramp, or a load that starts after
// the probe's idle half of the warmup. Request numbers run on across the
// parts. Like a Schedule it never reads a clock, and it is not safe for
// concurrent use: give each sender its own Share.
type Chain struct {
	start time.Duration
	parts []*Schedule
	offs  []time.Duration // each part's start, from the start of the load
	// base[p] is part p's first request number, known for p < known. A
	// part's request count is found by asking it, in order, so poisson
	// parts never replay (okCount[p]: requests of part p known to exist).
	base    []uint64
	okCount []uint64
	known   int
}

// NewChain is parts back to back from start.
func NewChain(start time.Duration, parts ...*Schedule) (*Chain, error) {
	switch {
	case len(parts) == 0:
		return nil, errors.New("a chain of no schedule")
	case start < 0 || start > MaxLength:
		return nil, fmt.Errorf("chain start %s: use 0 to %s", start, MaxLength)
	}
	c := &Chain{start: start, parts: parts, offs: make([]time.Duration, len(parts)),
		base: make([]uint64, len(parts)), okCount: make([]uint64, len(parts)), known: 1}
	at := start
	for i, p := range parts {
		if p == nil {
			return nil, fmt.Errorf("chain part %d is nil", i)
		}
		c.offs[i] = at
		at += p.End()
	}
	return c, nil
}

// Share is sender i's part of the chain for k senders: the chain of each
// part's Share (Schedule.Share says how they split).
func (c *Chain) Share(i, k int) (*Chain, error) {
	parts := make([]*Schedule, len(c.parts))
	for j, p := range c.parts {
		s, err := p.Share(i, k)
		if err != nil {
			return nil, err
		}
		parts[j] = s
	}
	return NewChain(c.start, parts...)
}

// Pace implements Pacer: request number sent is due at Intended(sent).
func (c *Chain) Pace(elapsed time.Duration, sent uint64) (time.Duration, bool) {
	at, ok := c.Intended(sent)
	return due(at, ok, elapsed)
}

// Intended is when request n is meant to be sent, from the start of the
// load; false past the last part. Asked in increasing order (as a sender
// asks) it costs what its part's Intended costs.
func (c *Chain) Intended(n uint64) (time.Duration, bool) {
	for p, s := range c.parts {
		if p+1 < c.known && n >= c.base[p+1] {
			continue // past this part, whose length is known
		}
		j := n - c.base[p]
		if at, ok := s.Intended(j); ok {
			c.okCount[p] = max(c.okCount[p], j+1)
			return c.offs[p] + at, true
		}
		if p+1 == len(c.parts) {
			return 0, false
		}
		if p+1 == c.known {
			c.base[p+1] = c.base[p] + c.count(p, j)
			c.known++
		}
	}
	return 0, false
}

// count is part p's number of requests, given that its request past is
// beyond it: the first number from okCount on that it does not have.
func (c *Chain) count(p int, past uint64) uint64 {
	s := c.parts[p]
	for m := c.okCount[p]; m < past; m++ {
		if _, ok := s.Intended(m); !ok {
			return m
		}
		c.okCount[p] = m + 1
	}
	return past
}

// End is when the last part ends, from the start of the load.
func (c *Chain) End() time.Duration {
	last := len(c.parts) - 1
	return c.offs[last] + c.parts[last].End()
}

// Start is when the first part starts.
func (c *Chain) Start() time.Duration { return c.start }
