// Package field is the error a library returns about its input: which
// field of it is wrong (a configuration's field, a function's parameter),
// the value given, and why, with every other field the message mentions
// kept as a reference rather than spelled into the text. A caller finds
// it with errors.As and names each field its own way (a command: the flag
// that sets it) through Error.Text, so no caller rewrites a message and no
// library names a caller's flag.
package field

import (
	"errors"
	"fmt"
	"strings"
)

// Error is an error about the field Field, given Value (nil: no value is
// shown). Its message is a format and arguments, as fmt.Errorf takes
// them (%w included); an argument of type Ref names a field, and an
// argument that is itself an *Error is named through the same Text. The
// message is shown after the field and its value ("Field Value: …"),
// unless it names its own field (a Ref to Field), where it says itself
// where the field stands.
type Error struct {
	Field  string
	Value  any
	format string
	args   []any
}

// Ref is a field a message refers to besides its own.
type Ref string

// Errorf is the error about field, given value, with a message as
// fmt.Errorf formats one.
func Errorf(field string, value any, format string, args ...any) *Error {
	return &Error{Field: field, Value: value, format: format, args: args}
}

// Error is the message with every field under its own name.
func (e *Error) Error() string { return e.Text(nil) }

// Text is the message with every field (Field, each Ref, and those of any
// *Error among the arguments) called what name returns for it; a field
// name does not know (it returns "", or name is nil) keeps its own name.
func (e *Error) Text(name func(field string) string) string {
	called := func(f string) string {
		if name != nil {
			if n := name(f); n != "" {
				return n
			}
		}
		return f
	}
	args := make([]any, len(e.args))
	namesItself := false
	for i, a := range e.args {
		switch a := a.(type) {
		case Ref:
			args[i] = called(string(a))
			namesItself = namesItself || string(a) == e.Field
		case *Error:
			args[i] = a.Text(name)
		default:
			args[i] = a
		}
	}
	msg := fmt.Sprintf(strings.ReplaceAll(e.format, "%w", "%v"), args...)
	switch {
	case e.Field == "" || namesItself:
		return msg
	case e.Value == nil:
		return called(e.Field) + ": " + msg
	}
	return fmt.Sprintf("%s %v: %s", called(e.Field), e.Value, msg)
}

// Unwrap is the errors among the message's arguments, as a %w of
// fmt.Errorf would wrap them.
func (e *Error) Unwrap() []error {
	var out []error
	for _, a := range e.args {
		if err, ok := a.(error); ok {
			out = append(out, err)
		}
	}
	return out
}

// Text is err's message with its fields named by name, when err is an
// *Error or wraps one without adding words of its own; any other error's
// message as it is (its fields, if it names any, under their own names).
func Text(err error, name func(field string) string) string {
	var fe *Error
	if errors.As(err, &fe) && fe.Error() == err.Error() {
		return fe.Text(name)
	}
	return err.Error()
}
