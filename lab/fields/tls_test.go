package fields_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/linerate/linerate/lab"
	"github.com/linerate/linerate/lab/fields"
)

// TLS flags that cannot mean anything together are refused, naming the
// flag; --tls-insecure is never implied; Args gives back what was parsed.
func TestTLSFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" when accepted
	}{
		{[]string{"--tls"}, ""},
		{[]string{"--tls", "--cacert", "ca.crt", "--sni", "db.test"}, ""},
		{[]string{"--tls", "--cert", "c.crt", "--key", "c.key", "--cacert", "ca.crt"}, ""},
		{[]string{"--tls", "--tls-insecure"}, ""},
		{[]string{"--cacert", "ca.crt"}, "--cacert: needs --tls"},
		{[]string{"--sni", "x"}, "--sni: needs --tls"},
		{[]string{"--tls-insecure"}, "--tls-insecure: needs --tls"},
		{[]string{"--key", "c.key"}, "--key: needs --tls"},
		{[]string{"--tls", "--tls-insecure", "--cacert", "ca.crt"}, "--tls-insecure: cannot go with --cacert"},
		{[]string{"--tls", "--cert", "c.crt"}, "--cert: needs --key"},
		{[]string{"--tls", "--key", "c.key"}, "--key: needs --cert"},
	} {
		fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
		var w lab.Workload
		fields.BindFlags(fs, &w)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if w.TLS.Insecure && !strings.Contains(strings.Join(tc.args, " "), "--tls-insecure") {
			t.Errorf("%v: insecure without --tls-insecure", tc.args)
		}
		err := fields.Validate(w.Resolve())
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: refused: %v", tc.args, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
		if err != nil {
			continue
		}
		back := pflag.NewFlagSet("bench", pflag.ContinueOnError)
		var w2 lab.Workload
		fields.BindFlags(back, &w2)
		if err := back.Parse(fields.Args(w.Resolve())); err != nil {
			t.Fatalf("%v: Args do not parse: %v", tc.args, err)
		}
		if !reflect.DeepEqual(w2.TLS, w.TLS) {
			t.Errorf("%v: Args give back %+v, want %+v", tc.args, w2.TLS, w.TLS)
		}
	}
}

// A certificate flag given a device, a directory or a file far larger than
// any PEM is refused, naming the flag, before it is read whole.
func TestTLSConfigRefusesHostileFiles(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.pem")
	if err := os.WriteFile(big, make([]byte, fields.MaxPEMBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tls  lab.TLS
		want string
	}{
		{lab.TLS{On: true, CACert: "/dev/zero"}, "--cacert: /dev/zero: not a regular file"},
		{lab.TLS{On: true, CACert: t.TempDir()}, "not a regular file"},
		{lab.TLS{On: true, CACert: big}, "--cacert: " + big + ": over"},
		{lab.TLS{On: true, Cert: "/dev/zero", Key: "/dev/zero"}, "--cert: /dev/zero: not a regular file"},
	} {
		_, err := fields.TLSConfig(tc.tls, "127.0.0.1")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.tls, err, tc.want)
		}
	}
}
