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
		// A package's -timeout: the dump goes to the tests still running,
		// which never get a fail event of their own; only the package does.
		{"a test still running when its package timed out", `{"Action":"run","Package":"p","Test":"TestQuick"}
{"Action":"pass","Package":"p","Test":"TestQuick"}
{"Action":"run","Package":"p","Test":"TestHangs"}
{"Action":"output","Package":"p","Test":"TestHangs","Output":"panic: test timed out after 2s\n"}
{"Action":"output","Package":"p","Test":"TestHangs","Output":"goroutine 5 [running]:\n"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t2.020s\n"}
{"Action":"fail","Package":"p"}`, "1 tests passed, 1 failed\n", "--- FAIL: p TestHangs (still running when the package ended)\npanic: test timed out after 2s\ngoroutine 5 [running]:\npackage p:\nFAIL\tp\t2.020s\n", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errw strings.Builder
			if code := count(strings.NewReader(tc.in), &out, &errw); code != tc.code || out.String() != tc.out || errw.String() != tc.errw {
				t.Errorf("exit %d, out %q, err %q; want %d, %q, %q", code, out.String(), errw.String(), tc.code, tc.out, tc.errw)
			}
		})
	}
}
