package mongosim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/qmlsab/qmlsab/internal/bsoncheck"
	"github.com/qmlsab/qmlsab/mongosim/wire"
)

// Storage is what survives a member's crash: its replica-set metadata and its
// oplog. A member's data is rebuilt by replaying the oplog at start-up, so the
// oplog is the only data that must be durable.
type Storage interface {
	Load() (meta Meta, oplog []bson.Raw, err error)
	SaveMeta(Meta) error
	Append(entries []bson.Raw) error
	// Reset replaces the whole oplog (rollback through resync).
	Reset(entries []bson.Raw) error
}

// Meta is a member's durable replica-set state.
type Meta struct {
	Config   bson.Raw `bson:"config,omitempty"`
	Term     int64    `bson:"term"`
	VoteTerm int64    `bson:"voteTerm"`
	VotedFor int      `bson:"votedFor"`
}

// MemStorage keeps durable state in memory: it survives Server.Kill and a
// restart inside the same process, which is all an in-process member needs.
type MemStorage struct {
	mu    sync.Mutex
	meta  Meta
	oplog []bson.Raw
}

func (m *MemStorage) Load() (Meta, []bson.Raw, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.meta, append([]bson.Raw(nil), m.oplog...), nil
}

func (m *MemStorage) SaveMeta(meta Meta) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.meta = meta
	return nil
}

func (m *MemStorage) Append(entries []bson.Raw) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.oplog = append(m.oplog, entries...)
	return nil
}

func (m *MemStorage) Reset(entries []bson.Raw) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.oplog = append([]bson.Raw(nil), entries...)
	return nil
}

// DirStorage keeps durable state in a --dbpath folder: meta.bson, replaced
// atomically, and oplog.bson, an append-only run of BSON documents.
//
// Load checks both before it trusts either. A torn tail of the oplog (a
// kill in the middle of an append leaves the last record incomplete) is
// cut off and logged; anything else that is not what mongosim wrote is
// corruption, and Load refuses it with a *CorruptFileError naming the file
// and the byte offset, leaving the file as it is, as mongod refuses to
// start on a damaged data file.
type DirStorage struct {
	Dir string
	// Logger receives what Load repairs (each torn tail cut off). Nil: the
	// logger of the member the DirStorage is the Storage of.
	Logger *slog.Logger

	mu sync.Mutex
	f  *os.File
}

const (
	metaFile  = "mongosim.meta.bson"
	oplogFile = "mongosim.oplog.bson"
)

// CorruptFileError is a dbpath file that is damaged in a way no crash of
// mongosim leaves behind: a member refuses to start on it.
type CorruptFileError struct {
	Path   string
	Offset int64
	Reason string
}

func (e *CorruptFileError) Error() string {
	return fmt.Sprintf("%s is corrupt at byte offset %d: %s; refusing to start (the file is left as it is: restore it or remove the dbpath to resync)",
		e.Path, e.Offset, e.Reason)
}

// Load reads the member's metadata and oplog; see DirStorage.
func (d *DirStorage) Load() (Meta, []bson.Raw, error) {
	return d.load(d.Logger)
}

// load is Load logging to log (discarded when nil).
func (d *DirStorage) load(log *slog.Logger) (Meta, []bson.Raw, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var meta Meta
	if err := os.MkdirAll(d.Dir, 0o755); err != nil {
		return meta, nil, fmt.Errorf("dbpath %s: %w", d.Dir, err)
	}
	metaPath := filepath.Join(d.Dir, metaFile)
	if b, err := os.ReadFile(metaPath); err == nil {
		// Written whole and renamed into place: any damage is corruption.
		if err := bsoncheck.Document(b); err != nil {
			return meta, nil, &CorruptFileError{Path: metaPath, Offset: 0, Reason: fmt.Sprintf("not one valid BSON document (%d bytes): %v", len(b), err)}
		}
		if err := bson.Unmarshal(b, &meta); err != nil {
			return meta, nil, &CorruptFileError{Path: metaPath, Offset: 0, Reason: fmt.Sprintf("not replica set metadata: %v", err)}
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return meta, nil, fmt.Errorf("reading %s: %w", metaPath, err)
	}
	path := filepath.Join(d.Dir, oplogFile)
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return meta, nil, fmt.Errorf("reading %s: %w", path, err)
	}
	entries, end, torn, err := scanOplog(b)
	if err != nil {
		var ce *CorruptFileError
		if errors.As(err, &ce) {
			ce.Path = path
		}
		return meta, nil, err
	}
	// A kill between writing a replacement and renaming it leaves the
	// temporary file behind; it never held the live copy.
	if stale, err := filepath.Glob(filepath.Join(d.Dir, "mongosim.*.bson.tmp*")); err == nil {
		for _, f := range stale {
			if err := os.Remove(f); err == nil {
				log.Warn("removed an unfinished replacement of a dbpath file", "file", f)
			}
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return meta, nil, fmt.Errorf("opening %s: %w", path, err)
	}
	if end < len(b) {
		log.Warn("cut a torn tail off the oplog file (a write the process did not finish)", "file", path,
			"offset", end, "bytesCut", len(b)-end, "entriesKept", len(entries), "tail", torn)
		if err := f.Truncate(int64(end)); err != nil {
			f.Close()
			return meta, nil, fmt.Errorf("cutting the torn tail of %s at offset %d: %w", path, end, err)
		}
	}
	if _, err := f.Seek(int64(end), io.SeekStart); err != nil {
		f.Close()
		return meta, nil, fmt.Errorf("%s: %w", path, err)
	}
	d.f = f
	return meta, entries, nil
}

// maxOplogRecord bounds an oplog record: none is larger than the largest
// message that could have carried its write. A record that claims more
// has a corrupt length, whatever follows it.
const maxOplogRecord = wire.MaxMessageSize

// scanOplog splits the oplog file b into its records. end is where the
// last whole, valid record ends; when it is short of len(b), what follows
// is a torn tail, described by torn. Appends write whole records one after
// another, so a kill mid-append leaves exactly one incomplete record at
// the end: fewer than the four bytes of its length, or a length that runs
// past the end of the file over bytes that are a valid beginning of a BSON
// document. A machine crash may also leave the tail as zeros (the file's
// size reached the disk before its data). Anything else (a record that is
// whole by its length but not valid BSON, a record whose document ends
// before its length says, bytes after a bad record) is corruption, an
// error with the record's offset (the caller adds the path).
func scanOplog(b []byte) (entries []bson.Raw, end int, torn string, err error) {
	off := 0
	corrupt := func(format string, args ...any) ([]bson.Raw, int, string, error) {
		return nil, off, "", &CorruptFileError{Offset: int64(off), Reason: fmt.Sprintf("oplog record %d: ", len(entries)+1) + fmt.Sprintf(format, args...)}
	}
	for off < len(b) {
		rest := len(b) - off
		if allZero(b[off:]) {
			return entries, off, fmt.Sprintf("%d zero bytes", rest), nil
		}
		if rest < 4 {
			return entries, off, fmt.Sprintf("%d bytes of a record's length", rest), nil
		}
		n := int(int32(binary.LittleEndian.Uint32(b[off:])))
		switch {
		case n < 5 || n > maxOplogRecord:
			return corrupt("length %d is not the length of any record mongosim writes (%d bytes follow)", n, rest)
		case n > rest:
			if err := validPrefix(b[off+4:]); err != nil {
				return corrupt("length %d runs past the end of the file, but %v: not a torn write", n, err)
			}
			return entries, off, fmt.Sprintf("%d of the %d bytes of the last record", rest, n), nil
		}
		rec := b[off : off+n]
		if err := bsoncheck.Document(rec); err != nil {
			if rest > n {
				return corrupt("not a valid BSON document (%v), and %d more bytes follow it", err, rest-n)
			}
			return corrupt("the last record is whole by its length but not a valid BSON document (%v): not a torn write", err)
		}
		entries = append(entries, bson.Raw(rec))
		off += n
	}
	return entries, off, "", nil
}

// validPrefix checks that elems, the bytes after a document's length, can
// be the beginning of a document cut short by the end of the file: every
// element it holds whole is valid, and the document's terminating byte is
// not among them (then the document was whole and its length is wrong).
func validPrefix(elems []byte) error {
	p := 0
	for p < len(elems) {
		if elems[p] == 0 {
			return fmt.Errorf("its document ends after %d bytes", 4+p+1)
		}
		if !bson.Type(elems[p]).IsValid() {
			return fmt.Errorf("byte %d is not a BSON element type (%#x)", 4+p, elems[p])
		}
		el, rest, ok := bsoncore.ReadElement(elems[p:])
		if !ok {
			return nil // the element the file's end cut short
		}
		if err := el.Validate(); err != nil {
			return fmt.Errorf("element %q at byte %d is not valid: %v", el.Key(), 4+p, err)
		}
		p = len(elems) - len(rest)
	}
	return nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func (d *DirStorage) SaveMeta(meta Meta) error {
	b, err := bson.Marshal(meta)
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(d.Dir, metaFile), b)
}

func (d *DirStorage) Append(entries []bson.Raw) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.f == nil {
		return errors.New("storage not loaded")
	}
	var buf bytes.Buffer
	for _, e := range entries {
		buf.Write(e)
	}
	_, err := d.f.Write(buf.Bytes())
	return err
}

func (d *DirStorage) Reset(entries []bson.Raw) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var buf bytes.Buffer
	for _, e := range entries {
		buf.Write(e)
	}
	path := filepath.Join(d.Dir, oplogFile)
	if err := writeFileAtomic(path, buf.Bytes()); err != nil {
		return err
	}
	if d.f != nil {
		d.f.Close()
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0o644)
	d.f = f
	return err
}

// Close releases the oplog file.
func (d *DirStorage) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.f == nil {
		return nil
	}
	err := d.f.Close()
	d.f = nil
	return err
}

func writeFileAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
