package history

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/internal/stormtest"
)

// A location with a MongoDB scheme is a URI even without its "//": Open
// and OpenReadOnly refuse it as malformed, with the password redacted,
// and create no file or folder (before, mongodb:bob:pw@host became an
// SQLite file whose name held the password).
func TestMongoSchemeLocationsAreNeverFilePaths(t *testing.T) {
	const pw = "Hunter2Secret"
	dir := t.TempDir()
	t.Chdir(dir)
	for _, loc := range []string{
		"mongodb:bob:" + pw + "@db.example.com",
		"mongodb:/bob:" + pw + "@127.0.0.1:1/",
		"MongoDB:bob:" + pw + "@127.0.0.1:1/hist",
		"mongodb+srv:bob:" + pw + "@cluster0.example.net",
		"mongodb+srv://bob:" + pw + "@",
		"mongodb://bob:" + pw + "@[::1]:x/",
	} {
		for name, open := range map[string]func(context.Context, string) (Store, error){"Open": Open, "OpenReadOnly": OpenReadOnly} {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			st, err := open(ctx, loc)
			cancel()
			if err == nil {
				st.Close()
				t.Errorf("%s(%q) succeeded", name, loc)
				continue
			}
			if strings.Contains(err.Error(), pw) || !strings.Contains(err.Error(), "<redacted>") {
				t.Errorf("%s(%q): %v; want a refusal with the password redacted", name, loc, err)
			}
		}
	}
	if names := stormtest.DirEntries(t, dir); len(names) != 0 {
		t.Errorf("refused locations left %v in the working folder", names)
	}
}
