package infra

import (
	"errors"
	"fmt"
)

// FieldError is a bad value in a provider's settings, named by the path of
// its field within them as the settings file writes it (server.address,
// dead-man). Settings know no file: whoever read them (a campaign, flags)
// turns the path into a place the operator can find.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// Fieldf is a *FieldError for field.
func Fieldf(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// FieldErrors lists the field errors in err (one, or several joined with
// errors.Join) and whatever else it holds, in order.
func FieldErrors(err error) (fields []*FieldError, other []error) {
	if err == nil {
		return nil, nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			f, o := FieldErrors(e)
			fields, other = append(fields, f...), append(other, o...)
		}
		return fields, other
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		return []*FieldError{fe}, nil
	}
	return nil, []error{err}
}
