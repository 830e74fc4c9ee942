package fields

import (
	"fmt"
	"strconv"
	"time"
)

// MaxStartAhead bounds bench --start-at on either side of now: a
// coordinator schedules its clients seconds ahead, so a time minutes away
// is a wrong clock or a wrong unit, not a plan.
const MaxStartAhead = 5 * time.Minute

// ParseStartAt reads --start-at: a time in Unix nanoseconds on this
// host's clock, within MaxStartAhead of now.
func ParseStartAt(s string, now time.Time) (time.Time, error) {
	ns, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, &FieldError{Field: "--start-at", Msg: fmt.Sprintf("%q: want Unix nanoseconds, e.g. %d", s, now.Add(2*time.Second).UnixNano())}
	}
	t := time.Unix(0, ns)
	if d := t.Sub(now); d > MaxStartAhead || d < -MaxStartAhead {
		return time.Time{}, &FieldError{Field: "--start-at", Msg: fmt.Sprintf("%s is %s from now on this host's clock; give a time within %s", t.UTC().Format(time.RFC3339Nano), d.Round(time.Second), MaxStartAhead)}
	}
	return t, nil
}
