package lab

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Rate is an open-loop arrival rate as the user gave it: requests per
// second in total (--rate 300, --rate 1.5k) or a payload bit rate
// (--rate 20Gbps) that becomes requests per second with the mean value
// size (OpsPerSec). Exactly one field is set; the zero Rate is "no rate"
// (closed loop). Kept as given so a record and fields.Args say what was
// asked, not a rounded conversion.
type Rate struct {
	PerSec     float64 `json:"ops_per_sec,omitempty"`
	BitsPerSec float64 `json:"bits_per_sec,omitempty"`
}

// Bounds on a rate. MinRate is one request per 100 s: slower is no load to
// measure. MaxRate, ten million requests a second, is far above what one
// client host sends and keeps every schedule's arithmetic exact (request
// counts stay far below 2^53). MaxBitRate is
// 10 Tbit/s, above any NIC of today (800 Gbit/s).
const (
	MinRate    = 0.01
	MaxRate    = 10_000_000
	MaxBitRate = 10e12
)

// RateForms is the help text for Rate.
const RateForms = "requests per second in total (300, 1.5k; 0.01-10000000) or a payload bit rate (500Mbps, 20Gbps; at most 10Tbps) converted with the mean value size"

// bitUnits are the bit-rate suffixes String uses, largest first, with
// their power of ten; ParseRate also takes K for k.
var bitUnits = []struct {
	prefix string
	exp    int
}{{"T", 12}, {"G", 9}, {"M", 6}, {"k", 3}, {"", 0}}

// bitPrefix is the power of ten of an SI prefix letter.
func bitPrefix(c byte) (int, bool) {
	switch c {
	case 'k', 'K':
		return 3, true
	case 'M':
		return 6, true
	case 'G':
		return 9, true
	case 'T':
		return 12, true
	}
	return 0, false
}

// maxNumberLen bounds the digits of a rate or weight: no real value needs
// more, and it keeps hostile input from costing anything.
const maxNumberLen = 32

// ParseRate reads --rate: a decimal number of requests per second with an
// optional k (thousands), or a decimal number with bps, kbps, Mbps, Gbps or
// Tbps (bits, SI). Exponents, hex, NaN, Inf, signs and byte rates (GBps)
// are refused.
func ParseRate(s string) (Rate, error) {
	t := strings.TrimSpace(s)
	bad := func(why string) (Rate, error) { return Rate{}, fmt.Errorf("rate %s: %s", quoteShort(s), why) }
	if t == "" {
		return bad("empty; use " + RateForms)
	}
	if strings.HasSuffix(t, "bps") {
		num, exp := strings.TrimSuffix(t, "bps"), 0
		if n := len(num); n > 0 {
			if e, ok := bitPrefix(num[n-1]); ok {
				num, exp = num[:n-1], e
			}
		}
		v, ok := parseDecimal(num, exp)
		if !ok {
			return bad("use " + RateForms)
		}
		if v <= 0 || v > MaxBitRate {
			return bad(fmt.Sprintf("use more than 0 and at most %s", formatBits(MaxBitRate)))
		}
		return Rate{BitsPerSec: v}, nil
	}
	if strings.HasSuffix(strings.ToLower(t), "bps") || strings.HasSuffix(t, "B/s") || strings.HasSuffix(t, "b/s") {
		return bad("bit rates are written bps, kbps, Mbps, Gbps or Tbps (bits, not bytes)")
	}
	num, exp := t, 0
	if strings.HasSuffix(num, "k") || strings.HasSuffix(num, "K") {
		num, exp = num[:len(num)-1], 3
	}
	v, ok := parseDecimal(num, exp)
	if !ok {
		return bad("use " + RateForms)
	}
	r := Rate{PerSec: v}
	if err := r.Validate(); err != nil {
		return bad(err.Error())
	}
	return r, nil
}

// quoteShort quotes flag input for an error message, cut to a length that
// keeps the message one line whatever was typed.
func quoteShort(s string) string {
	const keep = 60
	if len(s) > keep {
		return strconv.Quote(s[:keep]) + "..."
	}
	return strconv.Quote(s)
}

// parseDecimal reads digits with at most one point, scaled by 10^exp. The
// scaling is done by ParseFloat on "digits e exp", so 1.1Gbps is the double
// nearest 1.1e9, not 1.1 times 1e9 rounded twice.
func parseDecimal(num string, exp int) (float64, bool) {
	if num == "" || len(num) > maxNumberLen || num == "." {
		return 0, false
	}
	dot := false
	for _, c := range num {
		switch {
		case c == '.' && !dot:
			dot = true
		case c >= '0' && c <= '9':
		default:
			return 0, false
		}
	}
	v, err := strconv.ParseFloat(num+"e"+strconv.Itoa(exp), 64)
	return v, err == nil && !math.IsInf(v, 0) && !math.IsNaN(v)
}

// shiftDecimal prints v/10^exp as a plain decimal by moving the point in
// v's shortest representation, so parseDecimal(shiftDecimal(v, e), e) is v
// again, bit for bit.
func shiftDecimal(v float64, exp int) string {
	e := strconv.FormatFloat(v, 'e', -1, 64) // d.ddde±XX
	mant, pow, _ := strings.Cut(e, "e")
	p, _ := strconv.Atoi(pow)
	digits := strings.Replace(mant, ".", "", 1)
	point := 1 + p - exp // digits before the point
	switch {
	case point <= 0:
		return strings.TrimRight("0."+strings.Repeat("0", -point)+digits, ".")
	case point >= len(digits):
		return digits + strings.Repeat("0", point-len(digits))
	}
	return digits[:point] + "." + digits[point:]
}

func formatBits(v float64) string {
	for _, u := range bitUnits {
		if v >= math.Pow10(u.exp) || u.exp == 0 {
			return shiftDecimal(v, u.exp) + u.prefix + "bps"
		}
	}
	return "" // not reached: the last unit takes everything
}

// String prints the rate as ParseRate reads it: 300, 0.5, 20Gbps, 1.5Gbps.
// The zero Rate prints as "".
func (r Rate) String() string {
	switch {
	case r.BitsPerSec > 0:
		return formatBits(r.BitsPerSec)
	case r.PerSec > 0:
		return strconv.FormatFloat(r.PerSec, 'f', -1, 64)
	}
	return ""
}

// IsZero says no rate was given (closed loop).
func (r Rate) IsZero() bool { return r == Rate{} }

// IsBits says the rate was given in bits per second.
func (r Rate) IsBits() bool { return r.BitsPerSec != 0 }

// Validate says whether the rate is one linerate can pace, on its own; the
// bounds between fields are lab/fields'.
func (r Rate) Validate() error {
	switch {
	case r.PerSec != 0 && r.BitsPerSec != 0:
		return fmt.Errorf("both %v requests/s and %v bits/s: give one", r.PerSec, r.BitsPerSec)
	case r.BitsPerSec != 0:
		if !(r.BitsPerSec > 0 && r.BitsPerSec <= MaxBitRate) {
			return fmt.Errorf("%v bits/s: use more than 0 and at most %s", r.BitsPerSec, formatBits(MaxBitRate))
		}
	case !(r.PerSec >= MinRate && r.PerSec <= MaxRate): // NaN fails here too
		return fmt.Errorf("%v requests/s: use %v to %d", r.PerSec, MinRate, MaxRate)
	}
	return nil
}

// OpsPerSec is the rate in requests per second. A bit rate counts payload
// bits only (as the record's gbps does) and is divided by 8 x meanValueBytes,
// the value-size mix's mean (SizeMix.Mean): with a mix, the offered bit rate
// holds on average over the keys, not request by request. A result outside
// MinRate-MaxRate is an error that names both figures.
func (r Rate) OpsPerSec(meanValueBytes float64) (float64, error) {
	if err := r.Validate(); err != nil {
		return 0, err
	}
	if !r.IsBits() {
		return r.PerSec, nil
	}
	if !(meanValueBytes >= 1) || math.IsInf(meanValueBytes, 0) {
		return 0, fmt.Errorf("%s: mean value size %v bytes cannot convert a bit rate", r, meanValueBytes)
	}
	ops := r.BitsPerSec / (8 * meanValueBytes)
	if ops < MinRate || ops > MaxRate {
		return 0, fmt.Errorf("%s with values of %s on average is %.4g requests/s: use a rate of %v to %d requests/s",
			r, Size(math.Round(meanValueBytes)), ops, MinRate, MaxRate)
	}
	return ops, nil
}

// Set and Type make Rate a flag value.
func (r *Rate) Set(v string) error {
	p, err := ParseRate(v)
	if err != nil {
		return err
	}
	*r = p
	return nil
}

func (r *Rate) Type() string { return "rate" }

// UnmarshalJSON reads the object Rate marshals to, or a string as --rate
// takes it, and holds either to the same bounds: records are untrusted.
func (r *Rate) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		return r.Set(s)
	}
	type plain Rate
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("rate: %w", err)
	}
	if err := Rate(p).Validate(); err != nil && Rate(p) != (Rate{}) {
		return fmt.Errorf("rate: %w", err)
	}
	*r = Rate(p)
	return nil
}
