// Package depcheck lets a package's tests assert what it must not depend
// on, so the layering of the repository (simulator below experiment,
// report above results only) is checked, not just described.
package depcheck

import (
	"os/exec"
	"strings"
	"testing"
)

// Forbid fails t if pkg (an import path or ./relative pattern) depends,
// directly or not, on a package whose path starts with any prefix.
func Forbid(t *testing.T, pkg string, prefixes ...string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, p := range prefixes {
			if dep == p || strings.HasPrefix(dep, p+"/") {
				t.Errorf("%s depends on %s", pkg, dep)
			}
		}
	}
}
