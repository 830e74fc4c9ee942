package lab

import "fmt"

// Send is how the raw engine puts a SET's value body on the wire
// (--send). The key's header and the value's ends are always written
// (copied); the body is the shared, read-only pattern of ValueLayout.
type Send string

const (
	SendAuto     Send = ""         // the engine picks per host at start (the record says what it picked)
	SendCopy     Send = "copy"     // writev: the kernel copies the body into socket memory
	SendSplice   Send = "splice"   // vmsplice into a pipe, splice into the socket: page references
	SendZerocopy Send = "zerocopy" // sendmsg MSG_ZEROCOPY, completions read from the error queue
)

// SendForms lists --send's values.
const SendForms = "auto|copy|splice|zerocopy"

func (s *Send) Set(v string) error {
	switch Send(v) {
	case "auto":
		*s = SendAuto
	case SendCopy, SendSplice, SendZerocopy:
		*s = Send(v)
	default:
		return fmt.Errorf("%q is not a send mode (%s)", v, SendForms)
	}
	return nil
}

func (s Send) String() string {
	if s == SendAuto {
		return "auto"
	}
	return string(s)
}

func (s *Send) Type() string { return SendForms }
