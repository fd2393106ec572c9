package querycorpus

import (
	"strings"
	"testing"
)

// TestCasesAreWellFormed: every case has a unique stable ID, a rule, a
// command naming the corpus collection, and exactly one kind of answer.
func TestCasesAreWellFormed(t *testing.T) {
	cs := Cases()
	if len(cs) < 110 {
		t.Errorf("%d cases, want at least 110", len(cs))
	}
	seen := map[string]bool{}
	for _, c := range cs {
		if seen[c.ID] {
			t.Errorf("duplicate case ID %s", c.ID)
		}
		seen[c.ID] = true
		if c.Rule == "" || !strings.Contains(c.ID, "/") {
			t.Errorf("%s: needs a rule and a group/name ID", c.ID)
		}
		if len(c.Command) == 0 || c.Command[0].Value != Coll {
			t.Errorf("%s: the command must name the placeholder collection first", c.ID)
		}
		if c.WantCode != 0 && (len(c.Want) > 0 || c.WantCodeName == "") {
			t.Errorf("%s: an error case wants a code and codeName and no documents", c.ID)
		}
	}
}
