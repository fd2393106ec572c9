package mongosim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
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
// atomically, and oplog.bson, an append-only run of BSON documents. A torn
// tail (the process was killed mid-write) is cut off at load.
type DirStorage struct {
	Dir string

	mu sync.Mutex
	f  *os.File
}

const (
	metaFile  = "mongosim.meta.bson"
	oplogFile = "mongosim.oplog.bson"
)

func (d *DirStorage) Load() (Meta, []bson.Raw, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var meta Meta
	if err := os.MkdirAll(d.Dir, 0o755); err != nil {
		return meta, nil, err
	}
	if b, err := os.ReadFile(filepath.Join(d.Dir, metaFile)); err == nil {
		if err := bson.Unmarshal(b, &meta); err != nil {
			return meta, nil, fmt.Errorf("%s: %w", filepath.Join(d.Dir, metaFile), err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return meta, nil, err
	}
	path := filepath.Join(d.Dir, oplogFile)
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return meta, nil, err
	}
	var entries []bson.Raw
	off := 0
	for off+4 <= len(b) {
		n := int(int32(binary.LittleEndian.Uint32(b[off:])))
		if n < 5 || off+n > len(b) || bson.Raw(b[off:off+n]).Validate() != nil {
			break
		}
		entries = append(entries, bson.Raw(b[off:off+n]))
		off += n
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return meta, nil, err
	}
	if err := f.Truncate(int64(off)); err != nil {
		f.Close()
		return meta, nil, err
	}
	if _, err := f.Seek(int64(off), io.SeekStart); err != nil {
		f.Close()
		return meta, nil, err
	}
	d.f = f
	return meta, entries, nil
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
