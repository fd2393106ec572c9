package main_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim"
)

// A mongosim process on a dbpath whose oplog has one damaged byte in its
// second entry refuses to start, as mongod refuses a corrupt data file:
// exit 1, the file and the byte offset named on standard error and in the
// log, the oplog left as it was. (It used to start with the first entry
// only, having truncated the file after it, and said nothing.)
func TestProcessRefusesACorruptOplog(t *testing.T) {
	dbpath := filepath.Join(t.TempDir(), "db")
	st := &mongosim.DirStorage{Dir: dbpath}
	if _, _, err := st.Load(); err != nil {
		t.Fatal(err)
	}
	var entries []bson.Raw
	for i := range 1000 {
		b, err := bson.Marshal(bson.D{{Key: "ts", Value: bson.Timestamp{T: 1, I: uint32(i + 1)}}, {Key: "t", Value: int64(1)},
			{Key: "op", Value: "i"}, {Key: "ns", Value: "db.c"}, {Key: "o", Value: bson.D{{Key: "_id", Value: i}}}})
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, b)
	}
	if err := st.Append(entries); err != nil {
		t.Fatal(err)
	}
	st.Close()
	oplog := filepath.Join(dbpath, "mongosim.oplog.bson")
	b, err := os.ReadFile(oplog)
	if err != nil {
		t.Fatal(err)
	}
	second := len(entries[0])
	b[second+len(entries[1])/2] ^= 0xFF
	if err := os.WriteFile(oplog, b, 0o644); err != nil {
		t.Fatal(err)
	}

	var stderr bytes.Buffer
	logpath := filepath.Join(t.TempDir(), "mongosim.log")
	cmd := exec.Command(binary, "--port", fmt.Sprint(freePorts(t, 1)[0]), "--bind_ip", "127.0.0.1", "--dbpath", dbpath, "--logpath", logpath)
	cmd.Stderr = &stderr
	code := exitWithin(t, cmd, 60*time.Second)
	log, _ := os.ReadFile(logpath)
	want := fmt.Sprintf("offset %d", second)
	if code != 1 || !strings.Contains(stderr.String(), oplog) || !strings.Contains(stderr.String(), want) ||
		!strings.Contains(string(log), want) {
		t.Errorf("mongosim on a corrupt oplog: exit %d, stderr %q, log %q; want exit 1 naming %s and %s", code, stderr.String(), log, oplog, want)
	}
	if got, _ := os.ReadFile(oplog); !bytes.Equal(got, b) {
		t.Errorf("the refused oplog was changed: %d bytes, was %d", len(got), len(b))
	}
}
