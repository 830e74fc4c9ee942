package servers

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// Do names what the operator got wrong (the action, with its selector
// where there is one) and says it is theirs; an empty store lists a
// header, or null as JSON.
func TestDo(t *testing.T) {
	store := t.TempDir()
	for _, tc := range []struct {
		r     Request
		what  string // the ActionError's, "" for none
		want  string // in the error, or the output when no error
		input bool
	}{
		{r: Request{Action: "list", Runtime: "woody"}, want: `--runtime "woody": unknown suite`, input: true},
		{r: Request{Action: "install", Selectors: []string{"memcached@1"}}, what: "install", want: "memcached", input: true},
		{r: Request{Action: "remove"}, what: "remove", want: "name at least one NAME@VERSION", input: true},
		{r: Request{Action: "path", Selectors: []string{"valkey@9.1", "redis@7.0"}}, what: "path", want: "name exactly one", input: true},
		{r: Request{Action: "path", Selectors: []string{"valkey@9.1"}}, what: "path", want: "", input: true},
		{r: Request{Action: "upgrade"}, want: `unknown action "upgrade"`, input: true},
		{r: Request{Action: "list"}, want: "NAME@VERSION  DEBIAN VERSION"},
		{r: Request{Action: "list", JSON: true}, want: "null"},
	} {
		t.Run(tc.r.Action+" "+tc.want, func(t *testing.T) {
			tc.r.Store = store
			var out bytes.Buffer
			err := Do(context.Background(), tc.r, &out, nil)
			if tc.input != (err != nil) {
				t.Fatalf("error %v, want one: %v", err, tc.input)
			}
			if err == nil {
				if !strings.Contains(out.String(), tc.want) {
					t.Fatalf("printed %q, want %q in it", out.String(), tc.want)
				}
				return
			}
			what := ""
			if ae := (*ActionError)(nil); errors.As(err, &ae) {
				what = ae.What
			}
			if what != tc.what {
				t.Errorf("error %v names the action %q, want %q", err, what, tc.what)
			}
			if !strings.Contains(err.Error(), tc.want) || IsInput(err) != tc.input {
				t.Errorf("error %v (input %v), want %q in it, input %v", err, IsInput(err), tc.want, tc.input)
			}
		})
	}
}
