package engine

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/internal/rawsock"
)

// The plan follows the path: on this host auto copies and copy writes a
// request whole; off it auto splices (where a pipe opens, as on every
// kernel these tests run on) and every mode sends 128 KiB a call. TLS
// copies whatever the path, tlsChunk of plaintext sealed a call.
func TestChooseSendByPath(t *testing.T) {
	for _, tc := range []struct {
		asked      lab.Send
		tls, local bool
		mode       lab.Send
		call       int
	}{
		{lab.SendAuto, false, true, lab.SendCopy, wholeRequest},
		{lab.SendAuto, false, false, lab.SendSplice, rawsock.SendChunk},
		{lab.SendCopy, false, true, lab.SendCopy, wholeRequest},
		{lab.SendCopy, false, false, lab.SendCopy, rawsock.SendChunk},
		{lab.SendSplice, false, true, lab.SendSplice, rawsock.SendChunk},
		{lab.SendZerocopy, false, true, lab.SendZerocopy, rawsock.SendChunk},
		{lab.SendAuto, true, true, lab.SendCopy, tlsChunk},
		{lab.SendAuto, true, false, lab.SendCopy, tlsChunk},
		{lab.SendCopy, true, true, lab.SendCopy, tlsChunk},
	} {
		got, err := chooseSend(tc.asked, tc.tls, tc.local)
		if err != nil || got.mode != tc.mode || got.call != tc.call {
			t.Errorf("chooseSend(%s, tls %v, local %v) = %+v, %v; want %s, call %d", tc.asked, tc.tls, tc.local, got, err, tc.mode, tc.call)
		}
	}
	if _, err := chooseSend(lab.SendSplice, true, true); err == nil || !strings.Contains(err.Error(), "--send splice") {
		t.Errorf("splice under TLS: %v, want a refusal naming --send splice", err)
	}
	for call, want := range map[int]string{wholeRequest: "request", rawsock.SendChunk: "128KiB", tlsChunk: "256KiB"} {
		if got := callName(call); got != want {
			t.Errorf("callName(%d) = %q, want %q", call, got, want)
		}
	}
}

// A host is local when every address it names is loopback or held by
// this namespace: the kernel then delivers through its loopback device.
func TestHostLocal(t *testing.T) {
	own := func(ips ...string) func() ([]net.Addr, error) {
		return func() ([]net.Addr, error) {
			var as []net.Addr
			for _, ip := range ips {
				as = append(as, &net.IPNet{IP: net.ParseIP(ip), Mask: net.CIDRMask(24, 32)})
			}
			return as, nil
		}
	}
	broken := func() ([]net.Addr, error) { return nil, errors.New("no netlink") }
	for _, tc := range []struct {
		name, host string
		addrs      func() ([]net.Addr, error)
		want       bool
	}{
		{"IPv4 loopback", "127.0.0.1", own(), true},
		{"the rest of 127/8", "127.0.0.2", own(), true},
		{"IPv6 loopback", "::1", own(), true},
		{"a name for loopback", "localhost", own(), true},
		{"an address of this host", "198.18.0.2", own("198.18.0.2"), true},
		{"a peer on the link", "198.18.0.1", own("198.18.0.2"), false},
		{"a peer, its own addresses unknown", "198.18.0.1", broken, false},
		{"loopback, its own addresses unknown", "127.0.0.1", broken, true},
	} {
		if got := hostLocal(tc.host, tc.addrs); got != tc.want {
			t.Errorf("%s: hostLocal(%q) = %v, want %v", tc.name, tc.host, got, tc.want)
		}
	}
}

// What the plan says is what the socket is asked: against a server on
// this host, copy hands a 1 MiB SET to one writev whole, and splice
// sends its body 128 KiB a call. The socket's buffer is made larger than
// the request, so only the engine's bound can cut the call short.
func TestSendCallFollowsThePlan(t *testing.T) {
	for _, tc := range []struct {
		send  lab.Send
		whole bool
	}{
		{lab.SendCopy, true},
		{lab.SendAuto, true},
		{lab.SendSplice, false},
	} {
		t.Run(tc.send.String(), func(t *testing.T) {
			w := lab.Workload{Host: "127.0.0.1", Connections: 1, Threads: 1, Pipeline: 1, Keyspace: 1,
				ValueSz: lab.OneSize(1 << 20), Ratio: lab.Ratio{Sets: 1}, Seed: 3, Verify: lab.VerifyNone,
				Duration: lab.Duration(time.Second), Send: tc.send}
			w.Port = serveSink(t, w, 0)
			e := plannedEngine(t, w)
			defer e.shutdown()
			e.sched = measureSchedule(e.w, time.Now())
			wk := e.workers[0]
			wk.sched = e.sched
			c := wk.conns[0]
			if err := unix.SetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4<<20); err != nil {
				t.Fatal(err)
			}
			c.issue(0)
			request := c.sendLeft
			// The command and the value's header go alone before a body
			// sent by reference: the call that counts carries the body.
			n, err := c.sendStep()
			for err == nil && n < 1<<10 && c.sending {
				n, err = c.sendStep()
			}
			if err != nil {
				t.Fatalf("send call: %v", err)
			}
			switch {
			case tc.whole && n != request:
				t.Errorf("--send %s on loopback: a call took %d of the request's %d bytes, want all of it (plan %+v)", tc.send, n, request, wk.send)
			case !tc.whole && n > rawsock.SendChunk:
				t.Errorf("--send %s: a call took %d bytes, over %d", tc.send, n, rawsock.SendChunk)
			}
		})
	}
}
