package session

import (
	"os"

	"github.com/linerate/linerate/sweeps"
	"github.com/linerate/linerate/tuning"
)

// profile is a campaign's tuning profile, read before any host is up: a
// bad one fails before anything is made, and a netns pair is created with
// the queue count it asks for.
type profile struct {
	prof  tuning.Profile
	text  []byte // as the file says it: agents parse it themselves
	where string
}

// loadProfile reads c's profile from dir (nil when c has none).
func loadProfile(c *sweeps.Campaign, dir string) (*profile, error) {
	if c.Tuning == "" {
		return nil, nil
	}
	prof, where, err := tuning.LoadProfile(c.Tuning, dir)
	if err != nil {
		return nil, err
	}
	text, err := os.ReadFile(where)
	if err != nil {
		return nil, err
	}
	return &profile{prof: prof, text: text, where: where}, nil
}

// queues is the NIC queue count the profile asks for (0: it does not say,
// or there is no profile).
func (p *profile) queues() int {
	if p == nil {
		return 0
	}
	return max(p.prof.Queues.Combined, p.prof.Queues.RX, p.prof.Queues.TX)
}
