package ftdc

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// File names and defaults of a diagnostic.data directory.
const (
	// InterimFile holds the chunk being built, rewritten as it grows.
	InterimFile = "metrics.interim"
	// interimTemp is written first and renamed over InterimFile.
	interimTemp   = "metrics.interim.temp"
	archivePrefix = "metrics."

	// DefaultMaxFileSize is mongod's diagnosticDataCollectionFileSizeMB
	// default: 10 MB per archive file.
	DefaultMaxFileSize = 10 << 20
	// DefaultMaxDirectorySize is mongod's current
	// diagnosticDataCollectionDirectorySizeMB default (500 MB; older
	// releases used 100 MB and then 250 MB).
	DefaultMaxDirectorySize = 500 << 20
	// DefaultInterimSamples is how many deltas accumulate between rewrites
	// of the interim file (mongod's diagnosticDataCollectionSamplesPerInterimUpdate).
	DefaultInterimSamples = 10
)

// WriterOptions configures a Writer. The zero value means mongod's
// defaults.
type WriterOptions struct {
	// SamplesPerChunk is the most samples in one chunk (reference
	// included); default 300, at least 2.
	SamplesPerChunk int
	// InterimSamples: the interim file is rewritten each time the pending
	// chunk's delta count reaches a multiple of it. 0 means
	// DefaultInterimSamples; negative means only on Flush.
	InterimSamples int
	// MaxFileSize: the archive file is rotated once its size plus the
	// interim file's exceeds this. 0 means DefaultMaxFileSize.
	MaxFileSize int64
	// MaxDirectorySize: at each rotation the oldest archive files are
	// deleted while the directory holds this much or more. 0 means
	// DefaultMaxDirectorySize; negative means never delete.
	MaxDirectorySize int64
	// Metadata, when not nil, is written as a type-0 document at the start
	// of every archive file (mongod writes buildInfo, hostInfo and
	// getCmdLineOpts there). bson.Raw, BSON bytes, or anything
	// bson.Marshal accepts.
	Metadata any
	// Now is the clock for file names and for samples without a "start";
	// default time.Now.
	Now func() time.Time
}

// Writer writes samples into a diagnostic.data directory the way mongod
// does: chunks of up to SamplesPerChunk samples, a new chunk whenever a
// sample's schema differs from the chunk's reference, completed chunks
// appended to the current metrics.<time>-<n> file, the pending chunk
// mirrored in metrics.interim (written to a temporary file and renamed),
// and files rotated by size.
//
// A Writer is safe for concurrent use; it is meant to be fed once a second.
type Writer struct {
	mu   sync.Mutex
	dir  string
	opts WriterOptions

	cb       *chunkBuilder
	metadata []byte

	f           *os.File
	fileName    string
	size        int64
	interimSize int64
	lastSuffix  string
	uniq        int

	pm     metadataDeltas
	closed bool
}

// NewWriter starts writing into dir, creating it if needed. Like mongod at
// startup it opens a new archive file (metadata first), appends to it the
// chunk left in a previous run's interim file, and trims the directory.
func NewWriter(dir string, opts WriterOptions) (*Writer, error) {
	if opts.SamplesPerChunk == 0 {
		opts.SamplesPerChunk = DefaultSamplesPerChunk
	}
	if opts.SamplesPerChunk < 2 {
		return nil, fmt.Errorf("ftdc: SamplesPerChunk %d is below 2", opts.SamplesPerChunk)
	}
	if opts.SamplesPerChunk > MaxDeltas+1 || opts.SamplesPerChunk > MaxChunkValues {
		return nil, fmt.Errorf("ftdc: SamplesPerChunk %d is beyond the decoder's bounds", opts.SamplesPerChunk)
	}
	if opts.InterimSamples == 0 {
		opts.InterimSamples = DefaultInterimSamples
	}
	if opts.MaxFileSize <= 0 {
		opts.MaxFileSize = DefaultMaxFileSize
	}
	if opts.MaxDirectorySize == 0 {
		opts.MaxDirectorySize = DefaultMaxDirectorySize
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	w := &Writer{dir: dir, opts: opts, cb: newChunkBuilder(opts.SamplesPerChunk)}
	if opts.Metadata != nil {
		md, err := toRaw(opts.Metadata)
		if err != nil {
			return nil, err
		}
		w.metadata = bytes.Clone(md)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	recovered := w.recoverInterim()
	if err := w.openArchive(); err != nil {
		return nil, err
	}
	for _, doc := range recovered {
		if err := w.appendArchive(doc); err != nil {
			w.f.Close()
			return nil, err
		}
	}
	if err := os.Remove(filepath.Join(dir, InterimFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		w.f.Close()
		return nil, err
	}
	w.trim()
	return w, nil
}

// recoverInterim returns the metric chunks of a leftover interim file;
// reading it is best effort, as in mongod.
func (w *Writer) recoverInterim() [][]byte {
	f, err := os.Open(filepath.Join(w.dir, InterimFile))
	if err != nil {
		return nil
	}
	defer f.Close()
	r := NewNamedReader(f, InterimFile)
	var docs [][]byte
	for {
		d, err := r.Next()
		if err != nil {
			return docs
		}
		if d.Type != TypeMetricChunk {
			continue
		}
		if _, err := d.Schema(); err == nil {
			docs = append(docs, d.Raw)
		}
	}
}

// Dir is the directory written to.
func (w *Writer) Dir() string { return w.dir }

// File is the path of the archive file being written.
func (w *Writer) File() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fileName
}

// SetMetadata replaces the metadata written at the start of each later
// archive file.
func (w *Writer) SetMetadata(doc any) error {
	md, err := toRaw(doc)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.metadata = bytes.Clone(md)
	return nil
}

var errClosed = errors.New("ftdc: writer is closed")

// Add records one sample: a document with top-level `start` and `end`
// Dates around the collectors' sub-documents (bson.Raw, BSON bytes, bson.D
// or anything bson.Marshal accepts). The chunk's _id is its reference
// sample's `start` (the clock when absent).
func (w *Writer) Add(sample any) error {
	return w.addSample(sample, w.add)
}

// add is Add on an open writer, under its lock.
func (w *Writer) add(raw []byte) error {
	done, err := w.cb.add(raw, w.startOf(raw))
	if err != nil {
		return err
	}
	if done != nil {
		if err := w.appendArchive(ChunkDocument(done.id, done.payload)); err != nil {
			return err
		}
		if err := w.removeInterim(); err != nil {
			return err
		}
	} else if n := w.opts.InterimSamples; n > 0 && w.cb.nd > 0 && w.cb.nd%n == 0 {
		if err := w.writeInterim(); err != nil {
			return err
		}
	}
	return w.rotateIfFull()
}

// AddPeriodicMetadata records a periodic metadata sample (mongod collects
// these every few samples): {start, <name>: {start, ..., end}, ..., end}.
// The first sample, and any whose field names differ from the previous
// one's, is written whole as a type-2 document with index 0; after that only
// the second-level fields that changed (plus the start/end dates) are
// written, with index 1, 2, ...; nothing is written when nothing changed.
func (w *Writer) AddPeriodicMetadata(sample any) error {
	return w.addSample(sample, w.addPeriodicMetadata)
}

// addPeriodicMetadata is AddPeriodicMetadata on an open writer, under its
// lock.
func (w *Writer) addPeriodicMetadata(raw []byte) error {
	doc, index, err := w.pm.add(raw)
	if err != nil || doc == nil {
		return err
	}
	if err := w.appendArchive(MetadataDeltaDocument(w.startOf(raw), index, doc)); err != nil {
		return err
	}
	return w.rotateIfFull()
}

// Flush writes the pending chunk to the interim file now.
func (w *Writer) Flush() error {
	return w.whileOpen(func() error {
		if w.cb.empty() {
			return nil
		}
		return w.writeInterim()
	})
}

// Rotate closes the pending chunk into the current archive file and starts
// a new file.
func (w *Writer) Rotate() error {
	return w.whileOpen(w.rotate)
}

// Close writes the pending chunk to the archive file, removes the interim
// file and closes the archive.
func (w *Writer) Close() error {
	return w.shutDown(func() error {
		err := w.closeArchive()
		if cerr := w.closeFile(); err == nil {
			err = cerr
		}
		return err
	})
}

// Abort stops writing as a killed process stops: the archive file is
// closed without the pending chunk, and the interim file is left as it was
// last rewritten (samples added since are lost, as they are when mongod is
// killed). A NewWriter on the same directory takes the interim chunk into
// its first archive file.
func (w *Writer) Abort() error {
	return w.shutDown(w.closeFile)
}

// whileOpen runs fn under the writer's lock; once the writer is closed
// (or aborted) it fails with errClosed instead.
func (w *Writer) whileOpen(fn func() error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errClosed
	}
	return fn()
}

// addSample converts sample to BSON and has add record it on the open
// writer, under its lock.
func (w *Writer) addSample(sample any, add func(raw []byte) error) error {
	raw, err := toRaw(sample)
	if err != nil {
		return err
	}
	return w.whileOpen(func() error { return add(raw) })
}

// shutDown marks the writer closed and runs fn, under the writer's lock,
// the first time only: closing a closed writer does nothing.
func (w *Writer) shutDown(fn func() error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	return fn()
}

// closeFile closes the archive file, when one is open.
func (w *Writer) closeFile() error {
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

// startOf is a sample's start, or the clock's now when it has none.
func (w *Writer) startOf(raw []byte) time.Time {
	if t, ok := sampleTime(raw); ok {
		return t
	}
	return w.opts.Now().UTC()
}

// rotateIfFull starts a new archive file once the archive and interim
// files together exceed MaxFileSize.
func (w *Writer) rotateIfFull() error {
	if w.size+w.interimSize > w.opts.MaxFileSize {
		return w.rotate()
	}
	return nil
}

// closeArchive flushes the pending chunk into the archive and drops the
// interim file.
func (w *Writer) closeArchive() error {
	done, err := w.cb.finish(zlib.DefaultCompression)
	if err != nil {
		return err
	}
	if done != nil {
		if err := w.appendArchive(ChunkDocument(done.id, done.payload)); err != nil {
			return err
		}
	}
	return w.removeInterim()
}

func (w *Writer) rotate() error {
	if err := w.closeArchive(); err != nil {
		return err
	}
	if err := w.f.Close(); err != nil {
		return err
	}
	w.f = nil
	w.trim()
	w.pm = metadataDeltas{}
	return w.openArchive()
}

// openArchive creates the next metrics.<time>-<n> file and writes the
// metadata document to it.
func (w *Writer) openArchive() error {
	now := w.opts.Now().UTC()
	suffix := now.Format("2006-01-02T15-04-05Z")
	if suffix != w.lastSuffix {
		w.lastSuffix, w.uniq = suffix, 0
	}
	for ; ; w.uniq++ {
		if w.uniq >= 65000 {
			return fmt.Errorf("ftdc: too many archive files for %s", suffix)
		}
		name := filepath.Join(w.dir, fmt.Sprintf("%s%s-%05d", archivePrefix, suffix, w.uniq))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		w.f, w.fileName, w.size = f, name, 0
		break
	}
	if w.metadata != nil {
		return w.appendArchive(MetadataDocument(now, w.metadata))
	}
	return nil
}

func (w *Writer) appendArchive(doc []byte) error {
	if w.f == nil {
		return errors.New("ftdc: no archive file open (an earlier rotation failed)")
	}
	n, err := w.f.Write(doc)
	w.size += int64(n)
	if err != nil {
		return fmt.Errorf("ftdc: write %s: %w", w.fileName, err)
	}
	return nil
}

// writeInterim replaces the interim file with the pending chunk,
// atomically: a temporary file renamed over it.
func (w *Writer) writeInterim() error {
	p, err := w.cb.payload(zlib.BestSpeed)
	if err != nil {
		return err
	}
	doc := ChunkDocument(w.cb.refTime, p)
	tmp := filepath.Join(w.dir, interimTemp)
	if err := os.WriteFile(tmp, doc, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(w.dir, InterimFile)); err != nil {
		return err
	}
	w.interimSize = int64(len(doc))
	return nil
}

func (w *Writer) removeInterim() error {
	w.interimSize = 0
	err := os.Remove(filepath.Join(w.dir, InterimFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// trim deletes the oldest archive files while the directory holds
// MaxDirectorySize or more, counting from the newest, as mongod does.
func (w *Writer) trim() {
	if w.opts.MaxDirectorySize < 0 {
		return
	}
	ents, err := os.ReadDir(w.dir)
	if err != nil {
		return
	}
	var names []string
	for _, e := range ents {
		n := e.Name()
		if e.Type().IsRegular() && strings.HasPrefix(n, archivePrefix) && n != InterimFile && n != interimTemp {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var total int64
	for i := len(names) - 1; i >= 0; i-- {
		p := filepath.Join(w.dir, names[i])
		if p == w.fileName && w.f != nil {
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		total += fi.Size()
		if total >= w.opts.MaxDirectorySize {
			os.Remove(p)
		}
	}
}

// metadataDeltas keeps the state of periodic-metadata delta encoding.
type metadataDeltas struct {
	ref   []byte
	count int32
}

// add returns the document to write for sample and its index, or nil when
// nothing changed.
func (m *metadataDeltas) add(sample []byte) ([]byte, int32, error) {
	full := func() ([]byte, int32, error) {
		m.ref = bytes.Clone(sample)
		m.count = 0
		return m.ref, 0, nil
	}
	if m.ref == nil {
		return full()
	}
	sb, err := docBody(sample)
	if err != nil {
		return nil, 0, err
	}
	rb, _ := docBody(m.ref)
	var d docBuilder
	d.begin()
	changed := false
	for len(sb) > 0 || len(rb) > 0 {
		if len(sb) == 0 || len(rb) == 0 {
			return full()
		}
		var se, re element
		if se, sb, err = nextElement(sb); err != nil {
			return nil, 0, err
		}
		re, rb, _ = nextElement(rb)
		if !bytes.Equal(se.key, re.key) {
			return full()
		}
		name := string(se.key)
		if name == "start" || name == "end" {
			d.raw(se)
			continue
		}
		if se.typ != bsonDocument || re.typ != bsonDocument {
			if se.typ != re.typ || !bytes.Equal(se.val, re.val) {
				d.raw(se)
				changed = true
			}
			continue
		}
		sub, subChanged, same := diffLevel2(se.val, re.val)
		if !same {
			return full()
		}
		if subChanged {
			d.doc(name, sub)
			changed = true
		}
	}
	if !changed {
		return nil, 0, nil
	}
	m.ref = bytes.Clone(sample)
	m.count++
	return d.end(), m.count, nil
}

// diffLevel2 compares two sub-documents field by field. same is false when
// their field names differ; otherwise sub holds the start/end dates and the
// fields whose value changed.
func diffLevel2(s, r []byte) (sub []byte, changed, same bool) {
	sb, err := docBody(s)
	if err != nil {
		return nil, false, false
	}
	rb, err := docBody(r)
	if err != nil {
		return nil, false, false
	}
	var d docBuilder
	d.begin()
	for len(sb) > 0 || len(rb) > 0 {
		if len(sb) == 0 || len(rb) == 0 {
			return nil, false, false
		}
		var se, re element
		if se, sb, err = nextElement(sb); err != nil {
			return nil, false, false
		}
		if re, rb, err = nextElement(rb); err != nil {
			return nil, false, false
		}
		if !bytes.Equal(se.key, re.key) {
			return nil, false, false
		}
		k := string(se.key)
		if k == "start" || k == "end" {
			d.raw(se)
			continue
		}
		if se.typ != re.typ || !bytes.Equal(se.val, re.val) {
			d.raw(se)
			changed = true
		}
	}
	return d.end(), changed, true
}

func (d *docBuilder) raw(e element) {
	d.b = append(d.b, e.typ)
	d.b = append(d.b, e.key...)
	d.b = append(d.b, 0)
	d.b = append(d.b, e.val...)
}
