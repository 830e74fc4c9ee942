package fields_test

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/fields"
)

func TestRedactPassword(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"-a secret -c 4", "-a REDACTED -c 4"},
		{"--password secret", "--password REDACTED"},
		{"--password=secret -s 1MiB", "--password=REDACTED -s 1MiB"},
		{"-asecret", "-aREDACTED"},
		{"-c 4 -a", "-c 4 -a"}, // nothing follows: nothing to hide
		{"--user bob -p 7000", "--user bob -p 7000"},
	} {
		in := strings.Fields(tc.in)
		got := strings.Join(fields.RedactPassword(in), " ")
		if got != tc.want {
			t.Errorf("RedactPassword(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if strings.Join(in, " ") != tc.in {
			t.Errorf("RedactPassword changed its argument: %q", in)
		}
	}
}

func TestFinishFlags(t *testing.T) {
	t.Setenv(fields.PasswordEnv, "from-env")
	for _, tc := range []struct {
		args     string
		err      string // "" for none
		password string
	}{
		{args: "-s 1MiB", password: "from-env"},
		{args: "-a typed", password: "typed"},
		{args: "-c 0", err: "--connections 0: must be positive"},
		{args: "-d 0s", err: "--duration 0: must be positive"},
		{args: "--key-size 0", err: "--key-size 0: must be positive"},
		{args: "-n 200000 -s 1MiB", err: "not a request count"},
		{args: "-n 200000 -s 1MiB --keyspace-large", password: "from-env"},
	} {
		fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
		var w lab.Workload
		fields.BindFlags(fs, &w)
		if err := fs.Parse(strings.Fields(tc.args)); err != nil {
			t.Fatalf("%s: parse: %v", tc.args, err)
		}
		err := fields.FinishFlags(fs, &w)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.args, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one with %q", tc.args, err, tc.err)
		case tc.err == "" && w.Password != tc.password:
			t.Errorf("%s: password %q, want %q", tc.args, w.Password, tc.password)
		}
	}
}
