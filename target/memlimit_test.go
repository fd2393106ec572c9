package target

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/internal/field"
)

// A memory limit per member is cmd/mongosim's: asked of another binary,
// the local target refuses naming the arm and its option's field, never a
// command's flag (it named cmd/mongosim's).
func TestLocalMemberMemLimitNeedsMongosim(t *testing.T) {
	bin, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true(1) here")
	}
	arm := arms.Arm{Name: "L", Target: arms.TargetLocal, Mongod: bin}
	_, err = Provision(context.Background(), arm, Options{Dir: t.TempDir(), MemberMemLimitMB: 4096})
	var fe *field.Error
	if !errors.As(err, &fe) || fe.Field != FieldMemberMemLimitMB || !strings.Contains(err.Error(), "arm L: ") || strings.Contains(err.Error(), "--") {
		t.Errorf("a member memory limit on %s: %v; want a field error about %s naming the arm and no flag", bin, err, FieldMemberMemLimitMB)
	}
}
