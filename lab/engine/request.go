package engine

import (
	"strconv"
)

// The raw engine speaks just enough RESP for GET and SET: it builds request
// headers into fixed buffers here and parses one reply header line at a
// time with resp.ParseHeader. Payloads never pass through either.

// appendGet appends "GET key" as a RESP array.
func appendGet(dst []byte, keyID uint32, keySize int) []byte {
	return appendGetIn(dst, keyID, keySize, -1)
}

// appendGetIn is appendGet of the key's name in a cluster's slot (-1: no
// cluster; appendKeyName).
func appendGetIn(dst []byte, keyID uint32, keySize, slot int) []byte {
	dst = append(dst, "*2\r\n$3\r\nGET\r\n$"...)
	dst = strconv.AppendInt(dst, int64(keySize), 10)
	dst = append(dst, "\r\n"...)
	dst = appendKeyName(dst, keyID, keySize, slot)
	return append(dst, "\r\n"...)
}

// appendSetHeader appends "SET key" and the value's bulk header; the value
// and its closing CRLF are sent separately.
func appendSetHeader(dst []byte, keyID uint32, keySize int, valueLen int64) []byte {
	return appendSetHeaderIn(dst, keyID, keySize, -1, valueLen)
}

// appendSetHeaderIn is appendSetHeader in a cluster's slot, as appendGetIn.
func appendSetHeaderIn(dst []byte, keyID uint32, keySize, slot int, valueLen int64) []byte {
	dst = append(dst, "*3\r\n$3\r\nSET\r\n$"...)
	dst = strconv.AppendInt(dst, int64(keySize), 10)
	dst = append(dst, "\r\n"...)
	dst = appendKeyName(dst, keyID, keySize, slot)
	dst = append(dst, "\r\n$"...)
	dst = strconv.AppendInt(dst, valueLen, 10)
	return append(dst, "\r\n"...)
}
