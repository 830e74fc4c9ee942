package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
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
