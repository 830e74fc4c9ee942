package lab_test

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/linerate/linerate/lab/exitcode"
	"github.com/linerate/linerate/lab/labtest"
)

// Habits from other benchmarks that would make linerate do something
// nobody meant: each is refused before anything is written, with the figure.

// redis-benchmark's -n is a request count; linerate's is distinct keys. A
// large -n of large values is that habit, and would ask the server for
// -n x -s bytes.
func TestLargeKeyspaceOfLargeValuesAsksForTheFlag(t *testing.T) {
	bin := labtest.Binary(t)
	port := strconv.Itoa(labtest.FreePort(t)) // nothing listens: past the check, the connect fails
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-n", "200000"}, exitcode.Usage, "-n is the number of distinct keys, not a request count"},
		{[]string{"-n", "100001", "-s", "8MiB"}, exitcode.Usage, "--keyspace-large"},
		{[]string{"-n", "200000", "--keyspace-large"}, exitcode.SetupFailed, "127.0.0.1"},
		{[]string{"-n", "100000", "-s", "64MiB"}, exitcode.SetupFailed, "127.0.0.1"},
		{[]string{"-n", "200000", "-s", "512KiB"}, exitcode.SetupFailed, "127.0.0.1"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cmd := exec.Command(bin, append([]string{"bench", "--quiet", "-p", port, "-d", "1s"}, tc.args...)...)
			out, _ := cmd.CombinedOutput()
			if code := cmd.ProcessState.ExitCode(); code != tc.code || !strings.Contains(string(out), tc.want) {
				t.Fatalf("exit %d, want %d with %q: %s", code, tc.code, tc.want, out)
			}
		})
	}
}
