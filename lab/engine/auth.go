package engine

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/resp"
)

// authCommand is the AUTH the raw engine sends on each data connection.
func authCommand(w lab.Workload) []byte {
	if w.Password == "" {
		return nil
	}
	if w.User != "" {
		return resp.AppendCommand(nil, "AUTH", w.User, w.Password)
	}
	return resp.AppendCommand(nil, "AUTH", w.Password)
}

// authRaw authenticates a fresh data connection before it joins an epoll
// loop. It runs once per connection, off the hot path.
func authRaw(fd int, cmd []byte) (err error) {
	if err := unix.SetNonblock(fd, false); err != nil {
		return err
	}
	// The socket must be non-blocking again before it joins the loop:
	// rawsock's raw reads would block the worker's thread for good.
	defer func() {
		if e := unix.SetNonblock(fd, true); e != nil && err == nil {
			err = fmt.Errorf("socket back to non-blocking after AUTH: %w", e)
		}
	}()
	tv := unix.NsecToTimeval(int64(authTimeout))
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	defer func() {
		zero := unix.Timeval{}
		_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &zero)
	}()
	for off := 0; off < len(cmd); {
		n, err := unix.Write(fd, cmd[off:])
		if err != nil {
			return fmt.Errorf("send AUTH: %w", err)
		}
		off += n
	}
	return readAuthReply(&fdReader{fd: fd, deadline: time.Now().Add(authTimeout)})
}

// readAuthReply reads AUTH's one reply line off r, bounded in length (r
// bounds it in time): a peer that drips bytes or never ends the line is
// refused, not waited on.
func readAuthReply(src io.Reader) error {
	r := bufio.NewReaderSize(src, resp.MaxLine+2)
	line, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		err = resp.ErrLineTooLong
	}
	if err != nil {
		return fmt.Errorf("read AUTH reply: %w", err)
	}
	h, err := resp.ParseHeader(line)
	switch {
	case err != nil:
		return fmt.Errorf("read AUTH reply: %w", err)
	case h.Kind == resp.Error:
		return fmt.Errorf("AUTH refused: %s", resp.Printable(h.Line))
	case h.Kind != resp.Simple || string(h.Line) != "OK":
		return fmt.Errorf("read AUTH reply: %w %c", resp.ErrUnexpectedType, h.Kind)
	}
	return nil
}

// authTimeout bounds the whole AUTH exchange of a data connection.
const authTimeout = 5 * time.Second

// fdReader reads one byte at a time so nothing past the AUTH reply is
// taken off the socket, and gives up at its deadline.
type fdReader struct {
	fd       int
	deadline time.Time
}

func (f *fdReader) Read(p []byte) (int, error) {
	if time.Now().After(f.deadline) {
		return 0, fmt.Errorf("no whole reply within %s", authTimeout)
	}
	n, err := unix.Read(f.fd, p[:1])
	if n == 0 && err == nil {
		return 0, fmt.Errorf("connection closed")
	}
	return n, err
}
