package fields

import (
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/linerate/linerate/lab"
)

// PasswordEnv holds the AUTH password when -a is not given: how a
// coordinator hands it to a bench on another host without its command line.
const PasswordEnv = "LINERATE_PASSWORD"

// BindFlags registers the bench flags on fs, writing into w. The names and
// shorthands match the reference study's client so its command lines run
// unchanged; note that -h is the host, as there, and help is --help.
func BindFlags(fs *pflag.FlagSet, w *lab.Workload) {
	// The flags' defaults are Resolve's, so they are written once; -t is
	// left at zero, for Resolve to fit to the CPUs of the host that runs.
	def := lab.Workload{}.Resolve()
	for _, f := range Registry {
		if f.Go == "" {
			// Not a workload field: FinishFlags reads it back with GetBool.
			fs.BoolP(f.Flag, f.Short, false, f.Help)
			continue
		}
		v := f.value(w)
		switch {
		case f.Preset:
			f.field(w).Set(f.field(&def))
		case f.Default != "":
			if err := v.Set(f.Default); err != nil {
				panic(fmt.Sprintf("fields: --%s default %q: %v", f.Flag, f.Default, err))
			}
		}
		fl := fs.VarPF(v, f.Flag, f.Short, f.Help)
		if _, ok := v.(*boolValue); ok {
			fl.NoOptDefVal = "true"
		}
		if f.Shown != "" && !f.Preset && f.Default == "" && isDuration(v) {
			// The field stays zero until Resolve fills it in, and only
			// when it applies (a closed-loop record has no queue limit);
			// the help shows the default such a run gets.
			fl.DefValue = f.Shown
		}
	}
}

func isDuration(v pflag.Value) bool { _, ok := v.(*lab.Duration); return ok }

// FinishFlags completes a workload read by BindFlags's flags where one
// flag's default depends on another (a --ramp without -d runs for the
// ramp's length, not for -d's default; --command's ratio is its own; no
// -a takes PasswordEnv), and refuses what the flags' own parsers cannot
// see: a typed zero, a keyspace that looks like a request count.
func FinishFlags(fs *pflag.FlagSet, w *lab.Workload) error {
	if !w.Ramp.IsZero() && !fs.Changed("duration") {
		w.Duration = 0
	}
	// --command set without -r is -r 0:100, not -r's default 100:0.
	if w.Command != "" && !fs.Changed("ratio") {
		w.Ratio = lab.Ratio{}
	}
	for _, f := range Registry {
		if !f.Positive || !fs.Changed(f.Flag) {
			continue
		}
		switch fs.Lookup(f.Flag).Value.String() {
		case "0", "0s", "0B":
			return fmt.Errorf("--%s 0: must be positive (see linerate bench --help)", f.Flag)
		}
	}
	if w.Password == "" {
		w.Password = os.Getenv(PasswordEnv)
	}
	large, _ := fs.GetBool(KeyspaceLarge.Flag)
	return CheckKeyspaceHabit(*w, large)
}

// RedactPassword is a bench command line as a record keeps it: without
// the secret.
func RedactPassword(args []string) []string {
	out := append([]string(nil), args...)
	for i := 0; i < len(out); i++ {
		a := out[i]
		switch {
		case a == "-a" || a == "--password":
			if i+1 < len(out) {
				out[i+1] = "REDACTED"
				i++
			}
		case strings.HasPrefix(a, "--password="):
			out[i] = "--password=REDACTED"
		case strings.HasPrefix(a, "-a") && len(a) > 2:
			out[i] = "-aREDACTED"
		}
	}
	return out
}

// Args renders a resolved workload as bench flags, the inverse of
// BindFlags: first every field sent always, then the others that are set,
// each in Registry order. The password is left out: callers pass it
// through the environment (PasswordEnv). No thread count leaves it to the
// host that runs the load: its default depends on that host's CPUs, not
// the coordinator's.
func Args(w lab.Workload) []string {
	var always, set []string
	for _, f := range Registry {
		v, ok := f.argValue(w)
		if !ok {
			continue
		}
		name := "--" + f.Flag
		if f.Short != "" {
			name = "-" + f.Short
		}
		a := []string{name}
		if v != "true" || !f.isBool(w) {
			a = append(a, v)
		}
		if f.Always {
			always = append(always, a...)
		} else {
			set = append(set, a...)
		}
	}
	return append(always, set...)
}

// argValue is the field's value as Args sends it; false leaves it out.
func (f Field) argValue(w lab.Workload) (string, bool) {
	if f.arg != nil {
		v := f.arg(w)
		return v, v != ""
	}
	fv := f.field(&w)
	if !f.Always && (fv.IsZero() || (fv.Kind() == reflect.Slice && fv.Len() == 0)) {
		return "", false
	}
	return f.value(&w).String(), true
}

func (f Field) isBool(w lab.Workload) bool {
	if f.Go == "" {
		return true
	}
	_, ok := f.value(&w).(*boolValue)
	return ok
}

// field is the lab.Workload field f.Go names, settable.
func (f Field) field(w *lab.Workload) reflect.Value {
	v := reflect.ValueOf(w).Elem()
	for _, name := range strings.Split(f.Go, ".") {
		v = v.FieldByName(name)
		if !v.IsValid() {
			panic(fmt.Sprintf("fields: --%s names %s, which lab.Workload has not", f.Flag, f.Go))
		}
	}
	return v
}

// value is the field as a flag value: its own type when that parses
// itself (Duration, SizeMix, Rate ...), else a plain one of its kind.
func (f Field) value(w *lab.Workload) pflag.Value {
	p := f.field(w).Addr().Interface()
	switch p := p.(type) {
	case pflag.Value:
		return p
	case *int:
		return (*intValue)(p)
	case *uint64:
		return (*uint64Value)(p)
	case *string:
		return (*stringValue)(p)
	case *bool:
		return (*boolValue)(p)
	}
	panic(fmt.Sprintf("fields: --%s: no flag value for %T", f.Flag, p))
}

// Plain flag values, typed as pflag's own so --help reads the same.
type (
	intValue    int
	uint64Value uint64
	stringValue string
	boolValue   bool
)

func (v *intValue) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, strconv.IntSize)
	if err != nil {
		return numError(s, err)
	}
	*v = intValue(n)
	return nil
}
func (v *intValue) String() string { return strconv.Itoa(int(*v)) }
func (v *intValue) Type() string   { return "int" }

func (v *uint64Value) Set(s string) error {
	n, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return numError(s, err)
	}
	*v = uint64Value(n)
	return nil
}
func (v *uint64Value) String() string { return strconv.FormatUint(uint64(*v), 10) }
func (v *uint64Value) Type() string   { return "uint64" }

func (v *stringValue) Set(s string) error { *v = stringValue(s); return nil }
func (v *stringValue) String() string     { return string(*v) }
func (v *stringValue) Type() string       { return "string" }

func (v *boolValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*v = boolValue(b)
	return nil
}
func (v *boolValue) String() string   { return strconv.FormatBool(bool(*v)) }
func (v *boolValue) Type() string     { return "bool" }
func (v *boolValue) IsBoolFlag() bool { return true }

// numError is strconv's error without its function name, as pflag's own
// numbers report it.
func numError(s string, err error) error {
	if ne, ok := err.(*strconv.NumError); ok {
		return ne.Err
	}
	return err
}

// valueSizeArg is -s as Args sends it: one size in bytes, as always; a
// mix as ParseSizeMix reads it.
func valueSizeArg(w lab.Workload) string {
	if s, ok := w.ValueSz.Single(); ok {
		return strconv.FormatInt(int64(s), 10)
	}
	return w.ValueSz.String()
}

// Parse reads s as the field's value, as its flag would: an int for -c, a
// lab.Duration for -d, a lab.Rate for --rate. A campaign axis without
// parsing of its own reads its values with it.
func (f Field) Parse(s string) (any, error) {
	var w lab.Workload
	if err := f.value(&w).Set(s); err != nil {
		return nil, err
	}
	return f.field(&w).Interface(), nil
}

// Apply sets the field of w to v, a value Parse returned.
func (f Field) Apply(w *lab.Workload, v any) { f.field(w).Set(reflect.ValueOf(v)) }

// Format is v as the field's flag takes it.
func (f Field) Format(v any) string {
	var w lab.Workload
	f.Apply(&w, v)
	return f.value(&w).String()
}

// Get is the field's value in w, as Parse returns it.
func (f Field) Get(w lab.Workload) any { return f.field(&w).Interface() }
