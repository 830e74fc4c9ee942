package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/linerate/linerate/sweeps"
)

// A coordinator may write its last requests and close its side at once
// (or a script pipes a file in): every request read before the input ended
// gets its answer, none is dropped because the end was seen first. The
// loss was a race, so the agent serves the same input several times.
func TestAgentAnswersEveryRequestBeforeItsInputEnds(t *testing.T) {
	for round := 0; round < 20 && !t.Failed(); round++ {
		serveAll(t)
	}
}

func serveAll(t *testing.T) {
	const n = 40 // more than the agent's line buffer
	var in strings.Builder
	for i := 1; i <= n; i++ {
		if i == n/2 {
			in.WriteString("not json\n")
		}
		fmt.Fprintf(&in, `{"id":%d,"op":"frob"}`+"\n", i)
	}
	var out bytes.Buffer
	a := &Agent{StateDir: t.TempDir()}
	if err := a.Serve(context.Background(), strings.NewReader(in.String()), &out); err != nil {
		t.Fatal(err)
	}
	answered := map[int]bool{}
	notJSON := 0
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var rep struct {
			ID    int    `json:"id"`
			Event string `json:"event"`
			Error string `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rep); err != nil {
			t.Fatalf("agent wrote %q: %v", sc.Text(), err)
		}
		switch {
		case rep.Event != "":
		case rep.ID == 0 && strings.Contains(rep.Error, "not JSON"):
			notJSON++
		case strings.Contains(rep.Error, `unknown op "frob"`):
			answered[rep.ID] = true
		default:
			t.Errorf("unexpected answer %s", sc.Text())
		}
	}
	if len(answered) != n || notJSON != 1 {
		t.Errorf("answered %d of %d requests and %d of 1 bad lines before returning", len(answered), n, notJSON)
	}
}

// Every operation's request goes out as one flat line, {"id", "op", then
// its fields}, that its handler reads back as it was sent; the table has a
// handler for each operation and none for another.
func TestEveryRequestHasItsHandler(t *testing.T) {
	pv := &sweeps.PlanVersion{Segment: "x"}
	for _, tc := range []struct {
		req  request
		line string
	}{
		{factsRequest{Role: "client", FaultCost: true}, `{"id":7,"op":"facts","role":"client","fault_cost":true}`},
		{resolveRequest{}, `{"id":7,"op":"resolve"}`},
		{startRequest{Plan: pv, Bind: "198.18.0.1"}, `{"id":7,"op":"start","plan":{"spec":{"label":"","server":{}},"segment":"x"},"bind":"198.18.0.1"}`},
		{flushRequest{serverRef{3}}, `{"id":7,"op":"flushall","server":3}`},
		{stopRequest{serverRef{3}}, `{"id":7,"op":"stop","server":3}`},
		{bgsaveRequest{serverRef{3}}, `{"id":7,"op":"bgsave","server":3}`},
		{snapshotRequest{}, `{"id":7,"op":"snapshot"}`},
		{infoRequest{serverRef{3}, []string{"memory"}}, `{"id":7,"op":"info","server":3,"sections":["memory"]}`},
		{keyMemoryRequest{serverRef{3}, 5}, `{"id":7,"op":"key-memory","server":3,"keys":5}`},
		{tuneApplyRequest{Profile: "p", Scope: "kernel"}, `{"id":7,"op":"tune-apply","profile":"p","scope":"kernel"}`},
		{tuneVerifyRequest{}, `{"id":7,"op":"tune-verify"}`},
		{tuneRevertRequest{}, `{"id":7,"op":"tune-revert"}`},
		{nicRequest{Role: "server", DataAddr: "198.18.0.1"}, `{"id":7,"op":"nic","role":"server","data_addr":"198.18.0.1"}`},
	} {
		line, err := encodeRequest(7, tc.req)
		if err != nil || string(line) != tc.line {
			t.Errorf("%T: %s, %v\nwant %s", tc.req, line, err, tc.line)
		}
		if _, ok := handlers[tc.req.op()]; !ok {
			t.Errorf("%s: no handler", tc.req.op())
		}
		back := reflect.New(reflect.TypeOf(tc.req))
		if err := json.Unmarshal(line, back.Interface()); err != nil || !reflect.DeepEqual(back.Elem().Interface(), tc.req) {
			t.Errorf("%s read back as %+v, %v; sent %+v", tc.req.op(), back.Elem().Interface(), err, tc.req)
		}
	}
	if len(handlers) != 13 {
		t.Errorf("%d handlers for 13 operations", len(handlers))
	}
	if r := (&Agent{}).answer(context.Background(), "frob", []byte(`{}`)); r.Error != `agent: unknown op "frob"` {
		t.Errorf("unknown op: %q", r.Error)
	}
	if r := (&Agent{}).answer(context.Background(), opInfo, []byte(`{"server":"x"}`)); !strings.HasPrefix(r.Error, "info: json: ") {
		t.Errorf("a field of the wrong type: %q", r.Error)
	}
}
