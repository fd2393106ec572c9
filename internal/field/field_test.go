package field

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

var flags = map[string]string{"Spec.N": "-n", "Spec.Clock": "--clock", "dir": "--out"}

func flag(f string) string { return flags[f] }

// A message names its own field, the value given, and the fields it
// refers to: under their own names by default, under the caller's with
// Text; a field the caller does not know keeps its name.
func TestTextNamesEveryFieldTheCallersWay(t *testing.T) {
	e := Errorf("Spec.N", 0, "at least one trial per arm (with %v %s)", Ref("Spec.Clock"), "wall")
	if got, want := e.Error(), "Spec.N 0: at least one trial per arm (with Spec.Clock wall)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got, want := e.Text(flag), "-n 0: at least one trial per arm (with --clock wall)"; got != want {
		t.Errorf("Text = %q, want %q", got, want)
	}
	other := Errorf("Spec.Other", nil, "no such thing as %v", Ref("Spec.Nope"))
	if got, want := other.Text(flag), "Spec.Other: no such thing as Spec.Nope"; got != want {
		t.Errorf("Text of unknown fields = %q, want %q", got, want)
	}
	// A message that names its own field says where it stands.
	itself := Errorf("Spec.N", 4, "%v %v: /r was started with %v %v (leave %v out)", Ref("Spec.N"), 4, Ref("Spec.N"), 1, Ref("Spec.N"))
	if got, want := itself.Text(flag), "-n 4: /r was started with -n 1 (leave -n out)"; got != want {
		t.Errorf("Text of a message naming its field = %q, want %q", got, want)
	}
	noField := Errorf("", nil, "%s already holds a run; use %v or another %v", "/r", Ref("dir"), Ref("Spec.N"))
	if got, want := noField.Text(flag), "/r already holds a run; use --out or another -n"; got != want {
		t.Errorf("Text without a field = %q, want %q", got, want)
	}
}

// A field error wrapped in another one is named through the outer Text,
// and errors.Is and errors.As see what either wraps.
func TestWrappedErrorsStayTyped(t *testing.T) {
	inner := Errorf("Spec.Clock", "x", "want virtual or wall")
	outer := Errorf("dir", "/r", "checking: %w (and %w)", inner, fs.ErrNotExist)
	if got, want := outer.Text(flag), "--out /r: checking: --clock x: want virtual or wall (and file does not exist)"; got != want {
		t.Errorf("Text = %q, want %q", got, want)
	}
	var fe *Error
	if !errors.Is(outer, fs.ErrNotExist) || !errors.As(error(outer), &fe) || fe != outer {
		t.Error("errors.Is/As do not see through a field error")
	}
	if got := Text(outer, flag); got != outer.Text(flag) {
		t.Errorf("Text(err) = %q", got)
	}
	// Words a plain wrapper adds would be lost by naming the inner
	// error alone: such an error is shown as it is.
	plain := fmt.Errorf("run: %w", inner)
	if got, want := Text(plain, flag), "run: Spec.Clock x: want virtual or wall"; got != want {
		t.Errorf("Text(plain wrapper) = %q, want %q", got, want)
	}
	if got, want := Text(fmt.Errorf("%w", inner), flag), "--clock x: want virtual or wall"; got != want {
		t.Errorf("Text(bare wrapper) = %q, want %q", got, want)
	}
}
