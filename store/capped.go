package store

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// Limits on what a reader of a run folder, or of an input to import,
// reads or inflates from one file: generous beside what any run this tool
// accepts writes (results/README.md lists them beside the files), small
// beside a machine's memory, so a damaged or hostile file (a gzip bomb, a
// sparse file of gigabytes) is an error naming it instead of an out-of-
// memory death.
const (
	// MaxManifestBytes is manifest.json's limit (a trial's entry is a few
	// hundred bytes; a 100,000-trial run stays far below).
	MaxManifestBytes = 64 << 20
	// MaxTrialFileBytes is trial.json's limit (its figures and metadata,
	// tens of KiB).
	MaxTrialFileBytes = 16 << 20
	// MaxInflatedBytes is what one .jsonl.gz file of a trial (series,
	// samples, storm, outcomes, events) may inflate to.
	MaxInflatedBytes = 256 << 20
	// MaxCanariesInflatedBytes is canaries.jsonl.gz's: the largest
	// virtual trial the workload bounds accept has about 3.2 million
	// canaries of ~90 bytes a line.
	MaxCanariesInflatedBytes = 512 << 20
	// MaxInputFileBytes is an input's limit: an outcomes file to import
	// (CSV or JSON lines), an import spec, a workload or gate file.
	MaxInputFileBytes = 1 << 30
	// MaxSpecFileBytes is a YAML file's limit (workload, import spec,
	// gates): a page or two.
	MaxSpecFileBytes = 4 << 20
)

// InflatedLimit is the limit on what the .jsonl.gz file at path inflates
// to, by its name.
func InflatedLimit(path string) int64 {
	if filepath.Base(path) == CanaryFile {
		return MaxCanariesInflatedBytes
	}
	return MaxInflatedBytes
}

// ErrTooLarge is what a capped reader returns past its limit; the error
// it is wrapped in names the file and the limit.
var ErrTooLarge = errors.New("larger than this tool reads")

// LimitError is a file past a reader's limit.
type LimitError struct {
	Path  string
	Limit int64
	What  string // "is" (its size) or "inflates to" (a compressed file)
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s %s more than %d MiB: %v", e.Path, e.What, e.Limit>>20, ErrTooLarge)
}

func (e *LimitError) Unwrap() error { return ErrTooLarge }

// ReadFileCapped reads the whole file at path, refusing one larger than
// limit bytes (by its size when it is a regular file, so a sparse file is
// refused unread; by what it yields otherwise). It reads what is no
// regular file too (an input given as <(command)); a file of a run
// folder is read with ReadRunFile.
func ReadFileCapped(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readCapped(f, path, limit)
}

// ReadRunFile reads the whole file of a run folder at path, as
// ReadFileCapped does, refusing anything but a regular file (openRunFile).
func ReadRunFile(path string, limit int64) ([]byte, error) {
	f, err := openRunFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readCapped(f, path, limit)
}

// openRunFile opens a file of a run folder for reading. A run folder
// holds regular files only: the file is opened without waiting for a
// writer (a named pipe in its place opens at once instead of blocking
// its reader until a writer comes, maybe never) and anything but a
// regular file is refused, naming it and what it is.
func openRunFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is %s: a run folder holds regular files only", path, describeMode(path, fi.Mode()))
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// readCapped reads f, the file at path, whole, refusing more than limit
// bytes.
func readCapped(f *os.File, path string, limit int64) ([]byte, error) {
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > limit {
		return nil, &LimitError{Path: path, Limit: limit, What: "is"}
	}
	return io.ReadAll(CapReader(f, path, limit, "is"))
}

// CapReader is r, failing with a *LimitError naming path once more than
// limit bytes have been read; what is "is" for a file's own bytes,
// "inflates to" for a decompressor's output.
func CapReader(r io.Reader, path string, limit int64, what string) io.Reader {
	return &capReader{r: r, left: limit, err: &LimitError{Path: path, Limit: limit, What: what}}
}

type capReader struct {
	r    io.Reader
	left int64 // bytes still allowed
	err  error
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, c.err
	}
	// One byte past the limit tells a file of exactly limit bytes from a
	// larger one.
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return n - 1, c.err
	}
	return n, err
}

// fileErr is err about the file at path, naming it once: a *LimitError
// already names it.
func fileErr(path string, err error) error {
	var le *LimitError
	if errors.As(err, &le) {
		return err
	}
	return fmt.Errorf("%s: %w", path, err)
}
