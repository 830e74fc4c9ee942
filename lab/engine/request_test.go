package engine

import "testing"

func TestRequestEncoding(t *testing.T) {
	if got := string(appendGet(nil, 7, 8)); got != "*2\r\n$3\r\nGET\r\n$8\r\nkey:0007\r\n" {
		t.Errorf("GET = %q", got)
	}
	if got := string(appendSetHeader(nil, 7, 8, 1048576)); got != "*3\r\n$3\r\nSET\r\n$8\r\nkey:0007\r\n$1048576\r\n" {
		t.Errorf("SET = %q", got)
	}
	buf := make([]byte, 0, 128)
	if n := testing.AllocsPerRun(100, func() { buf = appendSetHeader(buf[:0], 12345, 16, 64<<20) }); n != 0 {
		t.Errorf("building a SET header allocates %.0f times", n)
	}
}
