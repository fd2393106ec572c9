package ftdc

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// A file whose start is no FTDC document is ErrNotFTDC, said without an
// offset; the cause stays reachable. A real FTDC file torn in its first
// document is torn, not "not FTDC".
func TestReaderCallsAFileThatIsNotFTDCSo(t *testing.T) {
	tmp := t.TempDir()
	for name, content := range map[string]string{
		"README.md": "# qmlsab\n\nA/B-test MongoDB query memory load shedding.\n",
		"short.txt": "hello",
	} {
		path := filepath.Join(tmp, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadAll(path)
		if !errors.Is(err, ErrNotFTDC) || !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: %v; want ErrNotFTDC (wrapping its cause)", name, err)
		}
		if err != nil && (err.Error() != path+": not an FTDC file (it does not begin with an FTDC document, {_id: <date>, type: …})") {
			t.Errorf("%s: message %q", name, err)
		}
	}
	meta, err := bson.Marshal(bson.D{{Key: "buildInfo", Value: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	doc := MetadataDocument(time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC), meta)
	torn := filepath.Join(tmp, "metrics.torn")
	if err := os.WriteFile(torn, doc[:len(doc)-3], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadAll(torn); !IsTruncated(err) || errors.Is(err, ErrNotFTDC) || !strings.Contains(err.Error(), "offset 0") {
		t.Errorf("a torn first document: %v; want it torn, at offset 0, not \"not FTDC\"", err)
	}
}
