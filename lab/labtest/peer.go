package labtest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Peer is a scripted RESP server on loopback: it reads each command a
// client sends and lets the script answer, so tests can see what linerate
// does with a server that answers wrongly, hugely or never.
type Peer struct {
	Addr string
	Port int
	l    net.Listener
	wg   sync.WaitGroup
}

// Script answers one command (args[0] is its name) on w. An error closes
// the connection. n counts the commands of the whole peer, from 0.
type Script func(n int, args [][]byte, w io.Writer) error

// PeerLife bounds every peer connection: nothing a test scripts runs longer.
const PeerLife = 30 * time.Second

// StartPeer serves script on a free loopback port until the test ends.
func StartPeer(t testing.TB, script Script) *Peer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Peer{Addr: l.Addr().String(), Port: l.Addr().(*net.TCPAddr).Port, l: l}
	var mu sync.Mutex
	n := 0
	conns := map[net.Conn]bool{}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(PeerLife))
				r := bufio.NewReader(c)
				for {
					args, err := ReadCommand(r)
					if err != nil {
						return
					}
					mu.Lock()
					i := n
					n++
					mu.Unlock()
					if script(i, args, c) != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		p.wg.Wait()
	})
	return p
}

// maxArg bounds one argument the peer reads; tests send small ones, and a
// SET of a large value is read whole.
const maxArg = 1 << 30

// ReadCommand reads one RESP array of bulk strings, as clients send.
func ReadCommand(r *bufio.Reader) ([][]byte, error) {
	n, err := readLen(r, '*')
	if err != nil {
		return nil, err
	}
	if n < 1 || n > 64 {
		return nil, fmt.Errorf("command of %d arguments", n)
	}
	args := make([][]byte, n)
	for i := range args {
		l, err := readLen(r, '$')
		if err != nil {
			return nil, err
		}
		if l < 0 || l > maxArg {
			return nil, fmt.Errorf("argument of %d bytes", l)
		}
		b := make([]byte, l+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		args[i] = b[:l]
	}
	return args, nil
}

func readLen(r *bufio.Reader, kind byte) (int, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	s := strings.TrimSuffix(string(line), "\r\n")
	if len(s) < 2 || s[0] != kind {
		return 0, fmt.Errorf("want %c, got %q", kind, s)
	}
	return strconv.Atoi(s[1:])
}

// Answer is a Script that answers each command by its name from replies
// (upper case; "" for any other), and +OK when neither is there.
func Answer(replies map[string]string) Script {
	return func(_ int, args [][]byte, w io.Writer) error {
		r, ok := replies[strings.ToUpper(string(args[0]))]
		if !ok {
			r, ok = replies[""]
		}
		if !ok {
			r = "+OK\r\n"
		}
		_, err := io.WriteString(w, r)
		return err
	}
}

// Endless writes fill forever (a reply that never ends), until the client
// closes or limit bytes are out; the peer's own bound.
func Endless(w io.Writer, head string, fill byte, limit int64) error {
	if _, err := io.WriteString(w, head); err != nil {
		return err
	}
	chunk := make([]byte, 64<<10)
	for i := range chunk {
		chunk[i] = fill
	}
	for sent := int64(0); sent < limit; sent += int64(len(chunk)) {
		if _, err := w.Write(chunk); err != nil {
			return err
		}
	}
	return errors.New("endless reply: limit reached")
}

// Malformed are replies no server sends. Whatever reads a server's
// replies must turn each into an error naming the server, at once and
// without allocating what the peer announces.
var Malformed = []struct {
	Name  string
	Write func(w io.Writer) error
}{
	{"negative bulk length", Say("$-5\r\n")},
	{"negative array length", Say("*-3\r\n")},
	{"bulk length 2^62", Say("$4611686018427387904\r\n")},
	{"bulk length 100 GB", Say("$100000000000\r\n")},
	{"line that never ends", func(w io.Writer) error { return Endless(w, "+", 'x', 1<<30) }},
	{"1 GB bulk announced", func(w io.Writer) error { return Endless(w, "$1073741824\r\n", 'v', 1<<30) }},
	{"garbage type byte", Say("?what\r\n")},
	{"array of 2^40 elements", Say("*1099511627776\r\n")},
	{"bulk inside an array announced at 1 GB", Say("*2\r\n$9\r\nmaxmemory\r\n$1073741824\r\n")},
	{"nested arrays without end", func(w io.Writer) error { return Endless(w, "", '*', 1<<30) }},
	{"integer that is not one", Say(":12a\r\n")},
	{"bulk not closed by CRLF", Say("$3\r\nabcXY")},
	{"LF without CR", Say("+OK\n")},
}

// Say writes s.
func Say(s string) func(io.Writer) error {
	return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
}

// Bulk is s as a RESP bulk string.
func Bulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }

// Redis answers PING, INFO, CONFIG GET and DBSIZE as a small Redis 7.2
// would, and +OK to anything else.
func Redis() Script {
	return Answer(map[string]string{
		"PING":   "+PONG\r\n",
		"INFO":   Bulk("# Server\r\nredis_version:7.2.4\r\nos:Linux\r\n"),
		"CONFIG": "*2\r\n$10\r\nio-threads\r\n$1\r\n4\r\n",
		"DBSIZE": ":0\r\n",
	})
}

// Sabotage answers cmd with bad and every other command as Redis does.
func Sabotage(cmd string, bad func(io.Writer) error) Script {
	good := Redis()
	return func(n int, args [][]byte, w io.Writer) error {
		if strings.EqualFold(string(args[0]), cmd) {
			return bad(w)
		}
		return good(n, args, w)
	}
}
