package vocabcheck_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/internal/vocabcheck"
)

const module = "github.com/qmlsab/qmlsab/"

// vocabulary is the results schema's closed vocabulary: its values are
// the constants store declares beside each type, and nothing else.
var vocabulary = []string{module + "store.Status", module + "store.Clock", module + "store.Phase", module + "store.EventKind"}

// A status, clock, phase or event kind is written through its constant
// everywhere but where the constants are declared: a literal would
// compile, and a typo in it would only make a figure silently absent.
func TestTheVocabularyIsWrittenThroughItsConstants(t *testing.T) {
	found, err := vocabcheck.Literals(vocabcheck.Config{Dir: "../.."}, vocabulary, module+"...")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Error(f)
	}
}

// The check finds a literal however it becomes a vocabulary type (a
// composite literal's element, a comparison's operand, a conversion, an
// untyped constant), names its file and line, and lets the empty string
// (a field not recorded) be.
func TestAPlantedLiteralIsFound(t *testing.T) {
	dir, err := filepath.Abs("../../run")
	if err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(dir, "planted.go")
	src := `package run

import "github.com/qmlsab/qmlsab/store"

const stormName = "storm"

var plantedPhases = []store.Phase{"warmup", store.PhaseStorm}

func plantedWall(c store.Clock) bool { return c == "wall" || c == "" }

var plantedKind = store.EventKind("kill")

var plantedStorm store.Phase = stormName

var plantedStatus = string(store.Valid) + "x"
`
	found, err := vocabcheck.Literals(vocabcheck.Config{Dir: "../..", Overlay: map[string][]byte{planted: []byte(src)}}, vocabulary, module+"run")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range found {
		if f.Pos.Filename != planted {
			continue // the package's own findings: the test above reports them
		}
		got = append(got, f.String()[len(dir)+1:])
	}
	want := []string{
		`planted.go:7:35: "warmup" converted to ` + module + `store.Phase; use its constant`,
		`planted.go:9:52: "wall" converted to ` + module + `store.Clock; use its constant`,
		`planted.go:11:35: "kill" converted to ` + module + `store.EventKind; use its constant`,
		`planted.go:13:32: stormName converted to ` + module + `store.Phase; use its constant`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
