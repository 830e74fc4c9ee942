// Package cluster is what linerate knows about Valkey/Redis Cluster: the
// key-to-slot function (CRC16/XMODEM of the key or its {hash tag}, mod
// 16384), the shortest hash tag of every slot, the slot map read from a
// node (CLUSTER SLOTS), and how a set of empty cluster-enabled servers is
// formed into one cluster (CLUSTER ADDSLOTSRANGE and MEET, no external
// tool) or has one slot moved between them (the resharding tests). It
// talks to servers only through lab/resp, so both the launcher (infra)
// and the raw engine (lab/engine) use it.
package cluster

import (
	"bytes"
	"strconv"
	"sync"
)

// Slots is the number of hash slots of a cluster.
const Slots = 16384

// crcTable is CRC16-CCITT/XMODEM (polynomial 0x1021, initial value 0, no
// reflection), the checksum the cluster specification hashes keys with.
var crcTable = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for b := 0; b < 8; b++ {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// CRC16 is the XMODEM CRC of p.
func CRC16(p []byte) uint16 {
	var c uint16
	for _, b := range p {
		c = c<<8 ^ crcTable[byte(c>>8)^b]
	}
	return c
}

// Slot is key's hash slot: the CRC of the text between the first '{' and
// the first '}' after it when that text is not empty, else of the whole
// key.
func Slot(key []byte) int {
	if i := bytes.IndexByte(key, '{'); i >= 0 {
		if j := bytes.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(CRC16(key) % Slots)
}

// tagAlphabet is what hash tags are spelled with: characters that need
// no quoting anywhere a key is printed.
const tagAlphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

// MaxTagLen is the longest tag Tag returns; a tagged key is at most
// MaxTagLen+2 bytes longer than its untagged name.
const MaxTagLen = 3

var (
	tagsOnce sync.Once
	tags     [Slots]string
)

// Tag is a shortest hash tag (without braces) whose key lands in slot:
// "{" + Tag(s) + "}" + anything hashes to s. The table is built once by
// trying tags in order of length (3 alphanumerics cover every slot).
func Tag(slot int) string {
	tagsOnce.Do(buildTags)
	return tags[slot]
}

func buildTags() {
	left := Slots
	var buf [MaxTagLen]byte
	var try func(pos, n int)
	try = func(pos, n int) {
		if left == 0 {
			return
		}
		if pos == n {
			s := CRC16(buf[:n]) % Slots
			if tags[s] == "" {
				tags[s] = string(buf[:n])
				left--
			}
			return
		}
		for i := 0; i < len(tagAlphabet) && left > 0; i++ {
			buf[pos] = tagAlphabet[i]
			try(pos+1, n)
		}
	}
	for n := 1; n <= MaxTagLen && left > 0; n++ {
		try(0, n)
	}
	if left > 0 {
		panic("cluster: " + strconv.Itoa(left) + " slots have no tag of at most MaxTagLen characters")
	}
}

// Ranges splits the slots into n contiguous ranges of sizes differing by
// at most one: node i serves Ranges(n)[i].
func Ranges(n int) [][2]int {
	out := make([][2]int, n)
	lo := 0
	for i := range out {
		hi := lo + Slots/n
		if i < Slots%n {
			hi++
		}
		out[i] = [2]int{lo, hi - 1}
		lo = hi
	}
	return out
}
