package arms

import "testing"

// An arm written in the wrong case is unknown (names are case-sensitive)
// and the error names the arm meant; a name like none is listed with the
// known ones only.
func TestSelectHintsTheArmOfAnotherCase(t *testing.T) {
	_, err := Select([]string{"d", "E"}, nil)
	if want := `unknown arm "d"; did you mean "D"? (arm names are case-sensitive; known: A, D, E, M, F, G)`; err == nil || err.Error() != want {
		t.Errorf("Select(d, E) = %v, want %q", err, want)
	}
	_, err = Select([]string{"Q"}, nil)
	if want := `unknown arm "Q" (known: A, D, E, M, F, G)`; err == nil || err.Error() != want {
		t.Errorf("Select(Q) = %v, want %q", err, want)
	}
}
