package resp_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/lab/labtest"
	"github.com/linerate/linerate/lab/resp"
)

func TestConnReplies(t *testing.T) {
	lim := resp.Limits{MaxReply: 1 << 10, MaxElems: 8, MaxDepth: 2}
	for _, tc := range []struct {
		name  string
		reply string
		check func(t *testing.T, v resp.Value, err error)
	}{
		{"simple", "+PONG\r\n", want(resp.Value{Kind: resp.Simple, Str: "PONG"})},
		{"bulk", "$5\r\nhe\r\no\r\n", want(resp.Value{Kind: resp.Bulk, Str: "he\r\no"})},
		{"nil bulk", "$-1\r\n", want(resp.Value{Kind: resp.Bulk, Nil: true})},
		{"nil array", "*-1\r\n", want(resp.Value{Kind: resp.Array, Nil: true})},
		{"integer", ":-7\r\n", want(resp.Value{Kind: resp.Int, Int: -7})},
		{"nested", "*2\r\n*1\r\n:1\r\n$0\r\n\r\n", want(resp.Value{Kind: resp.Array, Elems: []resp.Value{
			{Kind: resp.Array, Elems: []resp.Value{{Kind: resp.Int, Int: 1}}}, {Kind: resp.Bulk}}})},
		{"server error keeps the stream", "-ERR no such thing\r\n", func(t *testing.T, v resp.Value, err error) {
			var se *resp.ServerError
			if !errors.As(err, &se) || se.Msg != "ERR no such thing" {
				t.Errorf("got %v", err)
			}
		}},
		{"control bytes in an error are escaped", "-ERR \x1b[31mred\r\n", func(t *testing.T, v resp.Value, err error) {
			if err == nil || strings.Contains(err.Error(), "\x1b") {
				t.Errorf("got %q", err)
			}
		}},
		{"bulk at the reply bound", "$1015\r\n" + strings.Repeat("x", 1015) + "\r\n", func(t *testing.T, v resp.Value, err error) {
			if err != nil || len(v.Str) != 1015 {
				t.Errorf("a reply of exactly 1 KiB refused: %v", err)
			}
		}},
		{"bulk past the reply bound", "$1016\r\n" + strings.Repeat("x", 1016) + "\r\n", refused(resp.ErrTooLarge)},
		{"many small bulks past the reply bound", "*8\r\n" + strings.Repeat("$200\r\n"+strings.Repeat("y", 200)+"\r\n", 8), refused(resp.ErrTooLarge)},
		{"elements past the bound", "*2\r\n*4\r\n:1\r\n:1\r\n:1\r\n:1\r\n*4\r\n", refused(resp.ErrTooLarge)},
		{"nesting past the bound", "*1\r\n*1\r\n*1\r\n:1\r\n", refused(resp.ErrTooLarge)},
		{"negative bulk", "$-5\r\n", refused(resp.ErrMalformed)},
		{"negative array", "*-3\r\n", refused(resp.ErrMalformed)},
		{"RESP3 map", "%1\r\n", refused(resp.ErrUnexpectedType)},
		{"closed mid-reply", "$10\r\nabc", refused(io.ErrUnexpectedEOF)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := labtest.StartPeer(t, func(n int, _ [][]byte, w io.Writer) error {
				if n > 0 {
					_, err := io.WriteString(w, "+PONG\r\n")
					return err
				}
				_, err := io.WriteString(w, tc.reply)
				if strings.HasPrefix(tc.name, "closed") {
					return errors.New("close")
				}
				return err
			})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c, err := resp.Dial(ctx, p.Addr, resp.Options{Limits: lim})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			v, err := c.Do(ctx, "CMD", "arg")
			if err != nil && !strings.Contains(err.Error(), "CMD arg on "+p.Addr) {
				t.Errorf("error does not name the command and server: %v", err)
			}
			tc.check(t, v, err)
			// After a server error the stream is in step; after a fault it is
			// not, and the connection refuses further use.
			_, again := c.Text(ctx, "PING")
			var se *resp.ServerError
			if inStep := err == nil || errors.As(err, &se); inStep != (again == nil) {
				t.Errorf("next command after %v: %v", err, again)
			}
		})
	}
}

func want(w resp.Value) func(*testing.T, resp.Value, error) {
	return func(t *testing.T, v resp.Value, err error) {
		t.Helper()
		if err != nil || !equal(v, w) {
			t.Errorf("got %+v %v, want %+v", v, err, w)
		}
	}
}

func equal(a, b resp.Value) bool {
	if a.Kind != b.Kind || a.Str != b.Str || a.Int != b.Int || a.Nil != b.Nil || len(a.Elems) != len(b.Elems) {
		return false
	}
	for i := range a.Elems {
		if !equal(a.Elems[i], b.Elems[i]) {
			return false
		}
	}
	return true
}

func refused(target error) func(*testing.T, resp.Value, error) {
	return func(t *testing.T, _ resp.Value, err error) {
		t.Helper()
		if !errors.Is(err, target) {
			t.Errorf("got %v, want %v", err, target)
		}
	}
}

// A peer that stops mid-reply is given up at the caller's deadline, and
// the error says so.
func TestConnDeadline(t *testing.T) {
	p := labtest.StartPeer(t, func(_ int, _ [][]byte, w io.Writer) error {
		_, err := io.WriteString(w, "$100\r\nsome")
		return err
	})
	c, err := resp.Dial(context.Background(), p.Addr, resp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := c.Do(ctx, "INFO"); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), p.Addr) {
		t.Errorf("got %v", err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	c2, err := resp.Dial(context.Background(), p.Addr, resp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.Do(ctx2, "INFO"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
}

// AUTH's arguments never appear in an error.
func TestConnAuthSecret(t *testing.T) {
	p := labtest.StartPeer(t, labtest.Answer(map[string]string{"AUTH": "-WRONGPASS invalid username-password pair\r\n"}))
	_, err := resp.Dial(context.Background(), p.Addr, resp.Options{User: "u", Password: "hunter2"})
	var se *resp.ServerError
	if !errors.As(err, &se) || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "AUTH on "+p.Addr) {
		t.Errorf("got %v", err)
	}
}
