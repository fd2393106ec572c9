package mongosim_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim"
)

// oplogOf1000 writes a dbpath whose oplog holds 1,000 entries shaped as a
// member's (an insert with its document), and returns the dbpath, the
// oplog's bytes and each entry's offset.
func oplogOf1000(t *testing.T) (dir string, file []byte, offsets []int) {
	t.Helper()
	dir = t.TempDir()
	st := &mongosim.DirStorage{Dir: dir}
	if _, _, err := st.Load(); err != nil {
		t.Fatal(err)
	}
	var entries []bson.Raw
	off := 0
	for i := range 1000 {
		b, err := bson.Marshal(bson.D{{Key: "ts", Value: bson.Timestamp{T: 1, I: uint32(i + 1)}}, {Key: "t", Value: int64(1)},
			{Key: "op", Value: "i"}, {Key: "ns", Value: "db.c"}, {Key: "o", Value: bson.D{{Key: "_id", Value: i}, {Key: "pad", Value: "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}}}})
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, b)
		offsets = append(offsets, off)
		off += len(b)
	}
	if err := st.Append(entries); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveMeta(mongosim.Meta{Term: 3}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	file, err := os.ReadFile(filepath.Join(dir, "mongosim.oplog.bson"))
	if err != nil {
		t.Fatal(err)
	}
	return dir, file, offsets
}

// loadLogged loads dir with a DirStorage whose log the test reads.
func loadLogged(dir string) (mongosim.Meta, []bson.Raw, string, error) {
	var log bytes.Buffer
	st := &mongosim.DirStorage{Dir: dir, Logger: slog.New(slog.NewTextHandler(&log, nil))}
	meta, entries, err := st.Load()
	st.Close()
	return meta, entries, log.String(), err
}

// One damaged byte anywhere but in a torn tail is corruption: Load refuses,
// naming the file and the damaged record's offset, and leaves the file as
// it was. (Load used to stop at the first bad record and truncate the file
// there: a flipped byte in entry 2 of 1,000 left one entry and 153 bytes.)
func TestDirStorageRefusesACorruptOplog(t *testing.T) {
	dir, file, offsets := oplogOf1000(t)
	path := filepath.Join(dir, "mongosim.oplog.bson")
	second := offsets[1]
	for _, tc := range []struct {
		name string
		at   int // the byte flipped
		to   byte
	}{
		{"a byte of entry 2's document", second + 30, 0xFF},
		{"the type byte of an element of entry 2", second + 4, 0x77},
		{"entry 2's terminating byte", offsets[2] - 1, 0x01},
		{"the low byte of entry 2's length", second, file[second] + 3},
		{"the high byte of entry 2's length (it runs past the end)", second + 2, 0x40},
		{"the sign of entry 2's length", second + 3, 0x80},
		{"a byte of the last entry's document", offsets[999] + 30, 0xFF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := bytes.Clone(file)
			bad[tc.at] = tc.to
			if bytes.Equal(bad, file) {
				t.Fatal("the test flipped nothing")
			}
			if err := os.WriteFile(path, bad, 0o644); err != nil {
				t.Fatal(err)
			}
			_, entries, log, err := loadLogged(dir)
			var ce *mongosim.CorruptFileError
			if !errors.As(err, &ce) {
				t.Fatalf("Load of an oplog with %s: %d entries, err %v; want a CorruptFileError", tc.name, len(entries), err)
			}
			wantOff := second
			if tc.at >= offsets[999] {
				wantOff = offsets[999]
			}
			if ce.Path != path || ce.Offset != int64(wantOff) || !strings.Contains(err.Error(), path) ||
				!strings.Contains(err.Error(), fmt.Sprintf("offset %d", wantOff)) {
				t.Errorf("error %q (path %s, offset %d); want it to name %s and offset %d", err, ce.Path, ce.Offset, path, wantOff)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, bad) {
				t.Errorf("the refused oplog was changed: %d bytes, was %d", len(got), len(bad))
			}
			if strings.Contains(log, "torn") {
				t.Errorf("corruption was logged as a torn tail: %s", log)
			}
		})
	}
}

// A kill in the middle of an append leaves the last record incomplete (a
// machine crash may leave zeros): that tail alone is cut off, and the cut
// is logged with the file, the offset and the bytes cut.
func TestDirStorageCutsOnlyATornTail(t *testing.T) {
	dir, file, offsets := oplogOf1000(t)
	path := filepath.Join(dir, "mongosim.oplog.bson")
	next := file[offsets[999]:] // a whole record, to tear
	for _, tc := range []struct {
		name string
		tail []byte
	}{
		{"2 bytes of a length", next[:2]},
		{"a length alone", next[:4]},
		{"a length and a type byte", next[:5]},
		{"half a record", next[:len(next)/2]},
		{"all but the last byte", next[:len(next)-1]},
		{"a tail of zeros", make([]byte, 4096)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(path, append(bytes.Clone(file), tc.tail...), 0o644); err != nil {
				t.Fatal(err)
			}
			meta, entries, log, err := loadLogged(dir)
			if err != nil {
				t.Fatalf("Load with a torn tail (%s): %v", tc.name, err)
			}
			if len(entries) != 1000 || meta.Term != 3 {
				t.Errorf("kept %d entries, term %d; want 1000, 3", len(entries), meta.Term)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, file) {
				t.Errorf("after cutting the tail the oplog is %d bytes, want the %d whole records' %d", len(got), 1000, len(file))
			}
			if !strings.Contains(log, "torn tail") || !strings.Contains(log, path) ||
				!strings.Contains(log, fmt.Sprintf("offset=%d", len(file))) || !strings.Contains(log, fmt.Sprintf("bytesCut=%d", len(tc.tail))) {
				t.Errorf("the cut was not logged with file, offset %d and %d bytes: %q", len(file), len(tc.tail), log)
			}
		})
	}
	// A whole oplog is loaded without a word.
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, entries, log, err := loadLogged(dir); err != nil || len(entries) != 1000 || log != "" {
		t.Errorf("a whole oplog: %d entries, err %v, log %q", len(entries), err, log)
	}
}

// The metadata file is replaced whole (rename), so any damage to it is
// corruption: Load refuses naming it, and a temporary file a kill left
// beside it is removed (it never was the live copy).
func TestDirStorageRefusesCorruptMetadata(t *testing.T) {
	dir, _, _ := oplogOf1000(t)
	metaPath := filepath.Join(dir, "mongosim.meta.bson")
	good, err := os.ReadFile(metaPath)
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string][]byte{
		"empty":              {},
		"cut short":          good[:len(good)-3],
		"a flipped type":     append(append([]byte{}, good[:4]...), append([]byte{0x77}, good[5:]...)...),
		"not metadata":       bsonDoc(t, bson.D{{Key: "term", Value: "three"}}),
		"a trailing garbage": append(bytes.Clone(good), 1, 2, 3),
	} {
		if err := os.WriteFile(metaPath, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, _, err := loadLogged(dir)
		var ce *mongosim.CorruptFileError
		if !errors.As(err, &ce) || ce.Path != metaPath || !strings.Contains(err.Error(), metaPath) {
			t.Errorf("metadata %s: err %v; want a CorruptFileError naming %s", name, err, metaPath)
		}
		if got, _ := os.ReadFile(metaPath); !bytes.Equal(got, bad) {
			t.Errorf("metadata %s: the refused file was changed", name)
		}
	}
	if err := os.WriteFile(metaPath, good, 0o644); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, "mongosim.meta.bson.tmp123")
	if err := os.WriteFile(stale, good[:5], 0o644); err != nil {
		t.Fatal(err)
	}
	meta, _, log, err := loadLogged(dir)
	if err != nil || meta.Term != 3 {
		t.Fatalf("after restoring the metadata: term %d, %v", meta.Term, err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) || !strings.Contains(log, stale) {
		t.Errorf("the unfinished replacement %s: stat %v, log %q; want it removed and logged", stale, err, log)
	}
}

// A member started on a corrupt dbpath does not start: Start returns the
// error naming the file and offset, and the oplog is left as it was.
func TestMemberRefusesToStartOnACorruptOplog(t *testing.T) {
	dir, file, offsets := oplogOf1000(t)
	path := filepath.Join(dir, "mongosim.oplog.bson")
	bad := bytes.Clone(file)
	bad[offsets[1]+30] ^= 0xFF
	if err := os.WriteFile(path, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	srv, err := mongosim.Start(mongosim.Options{Storage: &mongosim.DirStorage{Dir: dir}})
	if err == nil {
		srv.Kill()
		t.Fatal("a member started on a corrupt oplog")
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), fmt.Sprintf("offset %d", offsets[1])) {
		t.Errorf("Start: %v; want the file %s and offset %d named", err, path, offsets[1])
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, bad) {
		t.Errorf("the refused oplog was changed: %d bytes, was %d", len(got), len(bad))
	}
}

func bsonDoc(t *testing.T, d bson.D) []byte {
	t.Helper()
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
