package resp

import (
	"errors"
	"strings"
	"testing"
)

func TestParseHeader(t *testing.T) {
	for _, tc := range []struct {
		in   string
		kind Kind
		n    int64
		used int
		err  error
	}{
		{"$8388608\r\nxyz", Bulk, 8388608, 10, nil},
		{"$-1\r\n", Bulk, -1, 5, nil},
		{"*-1\r\n", Array, -1, 5, nil},
		{"*2\r\n", Array, 2, 4, nil},
		{"_\r\n", Null, -1, 3, nil},
		{"+OK\r\n", Simple, 0, 5, nil},
		{"-ERR wrong\r\n", Error, 0, 12, nil},
		{":12\r\n", Int, 12, 5, nil},
		{":-12\r\n", Int, -12, 6, nil},
		{"$83886", 0, 0, 0, ErrNeedMore},     // split header
		{"$8388608\r", 0, 0, 0, ErrNeedMore}, // split between CR and LF
		{"", 0, 0, 0, ErrNeedMore},
		{"$12a\r\n", 0, 0, 0, ErrMalformed},
		{"$-2\r\n", 0, 0, 0, ErrMalformed},
		{"$-5\r\n", 0, 0, 0, ErrMalformed},
		{"*-3\r\n", 0, 0, 0, ErrMalformed},
		{"$99999999999999999999\r\n", 0, 0, 0, ErrMalformed}, // 20 digits
		{"$9999999999999999999\r\n", 0, 0, 0, ErrMalformed},  // 19 digits past int64
		{":9223372036854775808\r\n", 0, 0, 0, ErrMalformed},
		{"$5\n", 0, 0, 0, ErrMalformed}, // LF without CR
		{"?what\r\n", 0, 0, 0, ErrUnexpectedType},
		{"%1\r\n", 0, 0, 0, ErrUnexpectedType}, // RESP3 map: never asked for
		{"_x\r\n", 0, 0, 0, ErrMalformed},
		{"-" + strings.Repeat("x", MaxLine), 0, 0, 0, ErrLineTooLong},
	} {
		h, err := ParseHeader([]byte(tc.in))
		if !errors.Is(err, tc.err) {
			t.Errorf("%q: err %v, want %v", tc.in, err, tc.err)
			continue
		}
		if err != nil && tc.err != ErrNeedMore && !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: %v is not a malformed reply", tc.in, err)
		}
		if err == nil && (h.Kind != tc.kind || h.N != tc.n || h.Used != tc.used) {
			t.Errorf("%q: got %c n=%d used=%d", tc.in, h.Kind, h.N, h.Used)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = ParseHeader([]byte("$8388608\r\n")) }); n != 0 {
		t.Errorf("parsing a bulk header allocates %.0f times", n)
	}
}

func TestAppendCommand(t *testing.T) {
	if got := string(AppendCommand(nil, "CONFIG", "GET", "")); got != "*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$0\r\n\r\n" {
		t.Errorf("got %q", got)
	}
}
