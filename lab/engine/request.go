package engine

import (
	"strconv"

	"github.com/linerate/linerate/lab"
)

// The raw engine speaks just enough RESP for GET and SET: it builds request
// headers into fixed buffers here and parses one reply header line at a
// time with resp.ParseHeader. Payloads never pass through either.

// appendGet appends "GET key" as a RESP array.
func appendGet(dst []byte, keyID uint32, keySize int) []byte {
	dst = append(dst, "*2\r\n$3\r\nGET\r\n$"...)
	dst = strconv.AppendInt(dst, int64(keySize), 10)
	dst = append(dst, "\r\n"...)
	dst = lab.AppendKey(dst, keyID, keySize)
	return append(dst, "\r\n"...)
}

// appendSetHeader appends "SET key" and the value's bulk header; the value
// and its closing CRLF are sent separately.
func appendSetHeader(dst []byte, keyID uint32, keySize int, valueLen int64) []byte {
	dst = append(dst, "*3\r\n$3\r\nSET\r\n$"...)
	dst = strconv.AppendInt(dst, int64(keySize), 10)
	dst = append(dst, "\r\n"...)
	dst = lab.AppendKey(dst, keyID, keySize)
	dst = append(dst, "\r\n$"...)
	dst = strconv.AppendInt(dst, valueLen, 10)
	return append(dst, "\r\n"...)
}
