package ftdc

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Document is one top-level document of an FTDC file.
type Document struct {
	// Type is TypeMetadata, TypeMetricChunk or TypeMetadataDelta; other
	// values are passed through for the caller to skip.
	Type int32
	// ID is the document's _id.
	ID time.Time
	// File names the file the document came from ("" for an unnamed
	// stream) and Offset is its byte offset there.
	File   string
	Offset int64
	// Raw is the whole document.
	Raw bson.Raw
	// Doc is the `doc` field of metadata and metadata-delta documents.
	Doc bson.Raw
	// Index is a metadata-delta document's counter: 0 for a full periodic
	// metadata document, n for the n-th set of changes after it; -1 when
	// absent.
	Index int64
	// Data is a metric chunk's payload (the `data` binary); it aliases Raw.
	Data []byte

	chunk    *Chunk
	chunkErr error
	decoded  bool
}

func (d *Document) wrap(err error) error {
	return &Error{File: d.File, Offset: d.Offset, Err: err}
}

// Chunk decodes a metric chunk document (once; later calls return the same
// chunk). Errors are *Error values naming the file and offset.
func (d *Document) Chunk() (*Chunk, error) {
	if d.decoded {
		return d.chunk, d.chunkErr
	}
	d.decoded = true
	if d.Type != TypeMetricChunk {
		d.chunkErr = d.wrap(fmt.Errorf("document of type %d is not a metric chunk", d.Type))
		return nil, d.chunkErr
	}
	c, err := DecodeChunk(d.Data)
	if err != nil {
		d.chunkErr = d.wrap(err)
		return nil, d.chunkErr
	}
	c.ID = d.ID
	d.chunk = c
	return c, nil
}

// Schema decodes only a metric chunk's reference document and metric list,
// which is much cheaper than Chunk; the result has no sample values.
func (d *Document) Schema() (*Chunk, error) {
	if d.decoded {
		return d.chunk, d.chunkErr
	}
	if d.Type != TypeMetricChunk {
		return nil, d.wrap(fmt.Errorf("document of type %d is not a metric chunk", d.Type))
	}
	c, err := DecodeChunkSchema(d.Data)
	if err != nil {
		return nil, d.wrap(err)
	}
	c.ID = d.ID
	return c, nil
}

// Reader reads FTDC documents one at a time from a stream or from a list of
// files, holding one document (and, when asked, its decoded chunk) at a
// time. It is not safe for concurrent use.
type Reader struct {
	src    *bufio.Reader
	closer io.Closer
	name   string
	off    int64
	err    error // sticky end of a single stream

	files []string // still to open (Open)
	multi bool
	hdr   [4]byte
}

// NewReader reads FTDC documents from r.
func NewReader(r io.Reader) *Reader { return NewNamedReader(r, "") }

// NewNamedReader is NewReader with a name used in errors.
func NewNamedReader(r io.Reader, name string) *Reader {
	return &Reader{src: bufio.NewReaderSize(r, 64<<10), name: name}
}

// Open reads the given FTDC files and diagnostic.data directories in turn;
// see Files for the order.
//
// When one file ends in error (a torn last document, say), Next returns
// that error once and then goes on with the next file.
func Open(sources ...string) (*Reader, error) {
	files, err := Files(sources...)
	if err != nil {
		return nil, err
	}
	return &Reader{files: files, multi: true}, nil
}

// Files expands sources into the files to read. A file is taken as is; a
// directory contributes its metrics.* files sorted by name (which is time
// order for mongod's metrics.<time>-<n> names) with metrics.interim, the
// chunk still being built, last; temporary files are left out.
func Files(sources ...string) ([]string, error) {
	var out []string
	for _, s := range sources {
		fi, err := os.Stat(s)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			out = append(out, s)
			continue
		}
		ents, err := os.ReadDir(s)
		if err != nil {
			return nil, err
		}
		var names []string
		interim := false
		for _, e := range ents {
			n := e.Name()
			if !e.Type().IsRegular() || !strings.HasPrefix(n, archivePrefix) || strings.HasSuffix(n, ".temp") {
				continue
			}
			if n == InterimFile {
				interim = true
				continue
			}
			names = append(names, n)
		}
		slices.Sort(names)
		if interim {
			names = append(names, InterimFile)
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("ftdc: no metrics.* files in %s", s)
		}
		for _, n := range names {
			out = append(out, filepath.Join(s, n))
		}
	}
	return out, nil
}

// File is the name of the file being read.
func (r *Reader) File() string { return r.name }

// Close closes the file being read and forgets those not yet opened.
func (r *Reader) Close() error {
	r.files = nil
	return r.closeCurrent()
}

func (r *Reader) closeCurrent() error {
	var err error
	if r.closer != nil {
		err = r.closer.Close()
		r.closer = nil
	}
	r.src = nil
	return err
}

// Next returns the next document, or io.EOF after the last. Errors are
// *Error values naming the file and byte offset; a document torn by the end
// of its file wraps ErrTruncated, after everything before it was returned.
// A document whose fields are wrong is reported and skipped, so Next may be
// called again; an error in the framing ends the stream (for Open: that
// file, and the next call goes on with the next file).
func (r *Reader) Next() (*Document, error) {
	for {
		if r.src == nil {
			if len(r.files) == 0 {
				return nil, io.EOF
			}
			name := r.files[0]
			r.files = r.files[1:]
			f, err := os.Open(name)
			if err != nil {
				return nil, &Error{File: name, Err: err}
			}
			r.src, r.closer, r.name, r.off, r.err = bufio.NewReaderSize(f, 64<<10), f, name, 0, nil
		}
		if r.err != nil {
			return nil, r.err
		}
		d, fatal, err := r.read()
		switch {
		case err == nil:
			return d, nil
		case !fatal:
			return nil, err
		case !r.multi:
			r.err = err // a single stream stays at its end
			return nil, err
		}
		r.closeCurrent()
		if err != io.EOF {
			return nil, err
		}
	}
}

// read reads one document; fatal errors end the current stream.
func (r *Reader) read() (d *Document, fatal bool, err error) {
	off := r.off
	var start []byte // a file's first bytes after the length, when it has them
	fail := func(e error) *Error {
		// A file whose first document fails and whose start is not an
		// FTDC document's is no FTDC file (a README read as FTDC would
		// otherwise be a document "exceeding the decoder's bounds").
		if off == 0 && len(start) > 0 && !bytes.HasPrefix(ftdcStart, start) {
			e = &notFTDCError{cause: e}
		}
		return &Error{File: r.name, Offset: off, Err: e}
	}
	n, err := io.ReadFull(r.src, r.hdr[:])
	r.off += int64(n)
	switch {
	case err == io.EOF:
		return nil, true, io.EOF
	case err == io.ErrUnexpectedEOF:
		return nil, true, fail(fmt.Errorf("%w: %d of 4 length bytes", ErrTruncated, n))
	case err != nil:
		return nil, true, fail(err)
	}
	if off == 0 {
		peek, _ := r.src.Peek(len(ftdcStart)) // fewer at the end of a short file
		start = bytes.Clone(peek)
	}
	size := int64(int32(binary.LittleEndian.Uint32(r.hdr[:])))
	switch {
	case size == 0:
		// A zero length is the end marker of an emptied file, as in mongod.
		return nil, true, io.EOF
	case size < 5:
		return nil, true, fail(fmt.Errorf("%w: BSON length %d", ErrCorrupt, size))
	case size > MaxDocumentSize:
		return nil, true, fail(fmt.Errorf("%w: BSON length %d (bound %d)", ErrTooLarge, size, MaxDocumentSize))
	}
	// Grow the buffer as bytes arrive, so a lying length costs at most
	// twice what the stream really holds.
	c := size
	if c > 64<<10 {
		c = 64 << 10
	}
	buf := make([]byte, 4, c)
	copy(buf, r.hdr[:])
	for int64(len(buf)) < size {
		if len(buf) == cap(buf) {
			nc := 2 * int64(cap(buf))
			if nc > size {
				nc = size
			}
			nb := make([]byte, len(buf), nc)
			copy(nb, buf)
			buf = nb
		}
		n, err := io.ReadFull(r.src, buf[len(buf):cap(buf)])
		r.off += int64(n)
		buf = buf[:len(buf)+n]
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, true, fail(fmt.Errorf("%w: %d of %d bytes present", ErrTruncated, len(buf), size))
		}
		if err != nil {
			return nil, true, fail(err)
		}
	}
	d, err = parseDocument(buf)
	if err != nil {
		return nil, false, fail(err)
	}
	d.File, d.Offset = r.name, off
	return d, false, nil
}

// parseDocument reads the top-level fields of one FTDC document.
func parseDocument(buf []byte) (*Document, error) {
	body, err := docBody(buf)
	if err != nil {
		return nil, err
	}
	d := &Document{Raw: buf, Type: -1, Index: -1}
	var haveID, haveType, haveData, haveDoc bool
	var index, count int64 = -1, -1
	for len(body) > 0 {
		var e element
		e, body, err = nextElement(body)
		if err != nil {
			return nil, err
		}
		switch string(e.key) {
		case "_id":
			if e.typ == bsonDateTime && !haveID {
				d.ID = time.UnixMilli(int64(binary.LittleEndian.Uint64(e.val))).UTC()
				haveID = true
			}
		case "type":
			if v, ok := intValue(e); ok && !haveType {
				if v < math.MinInt32 || v > math.MaxInt32 {
					return nil, fmt.Errorf("%w: document type %d", ErrCorrupt, v)
				}
				d.Type, haveType = int32(v), true
			}
		case "data":
			if e.typ == bsonBinary && !haveData {
				d.Data, haveData = e.val[5:], true
			}
		case "doc":
			if e.typ == bsonDocument && !haveDoc {
				d.Doc, haveDoc = bson.Raw(e.val), true
			}
		case "index":
			if v, ok := intValue(e); ok && index < 0 {
				index = v
			}
		case "count":
			if v, ok := intValue(e); ok && count < 0 {
				count = v
			}
		}
	}
	switch {
	case !haveID:
		return nil, fmt.Errorf("%w: document has no Date _id", ErrCorrupt)
	case !haveType:
		return nil, fmt.Errorf("%w: document has no integer type", ErrCorrupt)
	case d.Type == TypeMetricChunk && !haveData:
		return nil, fmt.Errorf("%w: metric chunk has no binary data", ErrCorrupt)
	case (d.Type == TypeMetadata || d.Type == TypeMetadataDelta) && !haveDoc:
		return nil, fmt.Errorf("%w: metadata document of type %d has no doc", ErrCorrupt, d.Type)
	}
	if d.Type == TypeMetadataDelta {
		d.Index = index
		if d.Index < 0 {
			d.Index = count
		}
	}
	return d, nil
}

// intValue reads an integral number.
func intValue(e element) (int64, bool) {
	switch e.typ {
	case bsonInt32:
		return int64(int32(binary.LittleEndian.Uint32(e.val))), true
	case bsonInt64:
		return int64(binary.LittleEndian.Uint64(e.val)), true
	case bsonDouble:
		f := math.Float64frombits(binary.LittleEndian.Uint64(e.val))
		if f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 {
			return int64(f), true
		}
	}
	return 0, false
}

// ReadAll reads every document of the sources (see Open), decoding the
// metric chunks, and keeps them all in memory (use a Reader to hold one at
// a time). It stops at the first error other than a torn document;
// torn documents are skipped and reported together in the returned error,
// alongside everything that could be read.
func ReadAll(sources ...string) ([]*Document, error) {
	r, err := Open(sources...)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var docs []*Document
	torn, err := r.each(func(d *Document) error {
		if d.Type == TypeMetricChunk {
			if _, err := d.Chunk(); err != nil {
				return err
			}
		}
		docs = append(docs, d)
		return nil
	})
	if err != nil {
		return docs, err
	}
	return docs, torn
}

// eachMetricChunk is each over the metric chunks only (the documents
// that hold samples), each decoded by decode: Document.Chunk, or
// Document.Schema when the metrics' names are all that is needed.
func (r *Reader) eachMetricChunk(decode func(*Document) (*Chunk, error), fn func(*Document, *Chunk) error) (torn, err error) {
	return r.each(func(d *Document) error {
		if d.Type != TypeMetricChunk {
			return nil
		}
		c, err := decode(d)
		if err != nil {
			return err
		}
		return fn(d, c)
	})
}

// each hands every document r reads to fn, to the end of its sources,
// going on past torn documents (ErrTruncated): those come back joined in
// torn. Any other error, of reading or of fn, stops it and is err.
func (r *Reader) each(fn func(*Document) error) (torn, err error) {
	var torns []error
	for {
		d, err := r.Next()
		if err == io.EOF {
			return errors.Join(torns...), nil
		}
		if err != nil {
			if IsTruncated(err) {
				torns = append(torns, err)
				continue
			}
			return errors.Join(torns...), err
		}
		if err := fn(d); err != nil {
			return errors.Join(torns...), err
		}
	}
}
