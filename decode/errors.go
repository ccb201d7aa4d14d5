package decode

import (
	"errors"
	"fmt"
)

// ErrorKind tells a truncated input (the octets end before the structure
// does; more data could fix it) from a malformed one (the octets that are
// there break a rule of the protocol).
type ErrorKind uint8

const (
	// Truncated means the input ends before the named field.
	Truncated ErrorKind = iota + 1
	// Malformed means the named field holds a value the protocol forbids.
	Malformed
)

func (k ErrorKind) String() string {
	switch k {
	case Truncated:
		return "truncated"
	case Malformed:
		return "malformed"
	}
	return "error"
}

// Sentinels for errors.Is: errors.Is(err, decode.ErrTruncated).
var (
	ErrTruncated = errors.New("truncated")
	ErrMalformed = errors.New("malformed")
)

// Error is the one error type of this package. It names the protocol layer
// ("mpa", "ddp", "rdmap"), the field in the shared field-table spelling
// ("mpa.pd_length") and why it failed. For truncation, Need and Have give the
// octets the structure needs and the octets that were there.
type Error struct {
	Kind   ErrorKind
	Layer  string
	Field  string
	Reason string
	Need   int
	Have   int
}

func (e *Error) Error() string {
	if e.Kind == Truncated {
		return fmt.Sprintf("%s: truncated at %s: need %d octets, have %d", e.Layer, e.Field, e.Need, e.Have)
	}
	return fmt.Sprintf("%s: malformed %s: %s", e.Layer, e.Field, e.Reason)
}

// Is makes errors.Is(err, ErrTruncated) and errors.Is(err, ErrMalformed) work.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrTruncated:
		return e.Kind == Truncated
	case ErrMalformed:
		return e.Kind == Malformed
	}
	return false
}

// truncated builds a Truncated error. Errors are built only on the failure
// path, so the successful decode path stays allocation-free.
func truncated(layer, field string, need, have int) error {
	return &Error{Kind: Truncated, Layer: layer, Field: field, Need: need, Have: have}
}

// malformed builds a Malformed error.
func malformed(layer, field, reason string) error {
	return &Error{Kind: Malformed, Layer: layer, Field: field, Reason: reason}
}
