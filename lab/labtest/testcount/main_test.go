package main

import (
	"strings"
	"testing"
)

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		name, in, out, errw string
		code                int
	}{
		{"all pass", `{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Test":"TestA/sub"}
{"Action":"pass","Package":"p","Test":"TestB"}
{"Action":"pass","Package":"p"}`, "2 tests passed, 0 failed\n", "", 0},
		{"a failure with its output, a skip", `{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:1: boom\n"}
{"Action":"output","Package":"p","Test":"TestA/sub","Output":"    a_test.go:2: bang\n"}
{"Action":"fail","Package":"p","Test":"TestA/sub"}
{"Action":"fail","Package":"p","Test":"TestA"}
{"Action":"skip","Package":"p","Test":"TestC"}
{"Action":"fail","Package":"p"}`, "0 tests passed, 1 failed; skipped by the tests themselves: TestC\n", "--- FAIL: p TestA\n    a_test.go:1: boom\n    a_test.go:2: bang\n", 1},
		{"a package that did not build", `# p
{"Action":"output","Package":"q","Output":"FAIL\tq [build failed]\n"}
{"Action":"fail","Package":"q"}`, "# p\n0 tests passed, 0 failed\n", "package q:\nFAIL\tq [build failed]\n", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errw strings.Builder
			if code := count(strings.NewReader(tc.in), &out, &errw); code != tc.code || out.String() != tc.out || errw.String() != tc.errw {
				t.Errorf("exit %d, out %q, err %q; want %d, %q, %q", code, out.String(), errw.String(), tc.code, tc.out, tc.errw)
			}
		})
	}
}
