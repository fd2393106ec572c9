package ferretdb

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// rootDir is qmlsab's own module, two folders up.
func rootDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err != nil || !strings.HasPrefix(string(b), "module github.com/qmlsab/qmlsab\n") {
		t.Fatalf("%s is not qmlsab's root module (go.mod: %v)", dir, err)
	}
	return dir
}

// goCmd is the go command run in qmlsab's root module, with no workspace
// file bringing this module in and no automatic go.mod update.
func goCmd(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = rootDir(t)
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	return cmd
}

// FerretDB is a test peer, never a dependency of the product: qmlsab's
// and mongosim's commands build without a FerretDB package, and the root
// module's go.mod and go.sum do not mention it (so this module's
// requirements did not leak into them).
func TestFerretDBStaysOutOfTheProduct(t *testing.T) {
	out, err := goCmd(t, "list", "-deps", "./cmd/qmlsab", "./cmd/mongosim").Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/qmlsab ./cmd/mongosim in the root module: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("go list -deps listed %d packages; want the commands' whole dependency tree", len(deps))
	}
	for _, dep := range deps {
		if strings.HasPrefix(strings.ToLower(dep), "github.com/ferretdb/") {
			t.Errorf("the product depends on %s", dep)
		}
	}
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(rootDir(t), f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(strings.ToLower(string(b)), "ferretdb") {
			t.Errorf("the root module's %s mentions FerretDB", f)
		}
	}
}
