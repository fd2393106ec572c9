package store

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"unsafe"
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

// Limits on the records one .jsonl.gz file of a trial holds. Bytes do
// not bound records: a line "{}" is 3 bytes and decodes to a whole record,
// so a 255 KB file inflating to just under its byte limit held 89 million
// of them, ~9 GB as []Second. Each limit is what the largest trial the
// workload's bounds accept records, with room to spare; the workload
// package's tests hold the bounds named here to its own (MaxTrialLength,
// MaxStormOps, MaxCanaryRate, MaxMergeOps). Writers keep them too
// (WriteJSONLinesGz), so no folder this tool writes is one it cannot read.
const (
	// MaxTrialSeconds is the longest trial's phases: 2 h
	// (workload.MaxTrialLength).
	MaxTrialSeconds = 2 * 60 * 60
	// MaxSecondRecords is series.jsonl.gz's and outcomes.jsonl.gz's limit:
	// one record a second of the trial, four times the longest trial's
	// phases, since a wall-clock trial records until its storm's last
	// operations return and an imported trial's window may run past its
	// phases (its until).
	MaxSecondRecords = 4 * MaxTrialSeconds
	// MaxStormRecords is storm.jsonl.gz's: a trial schedules at most
	// 300,000 storm queries on average (workload.MaxStormOps); its Poisson
	// arrivals scatter the count by √300,000 ≈ 550, so a tenth more (55
	// standard deviations) is never met by chance.
	MaxStormRecords = 300_000 + 300_000/10
	// MaxCanaryRecords is canaries.jsonl.gz's: at most 1000 canaries a
	// second (workload.MaxCanaryRate, a fixed rate) over the longest
	// trial, 7.2 million (the memory budget accepts at most ~3.3 million).
	MaxCanaryRecords = 1000 * MaxTrialSeconds
	// MaxMergeRecords is merge.jsonl.gz's: a merge trial runs at most
	// 10,000 ops (workload.MaxMergeOps).
	MaxMergeRecords = 10_000
	// MaxSampleRecords is samples.jsonl.gz's. A trial samples every member
	// each second (and an imported one keeps its diagnostic data's
	// samples), and nothing bounds a deployment's members, so the limit is
	// the count whose records, each a Sample of 112 bytes (64-bit) before
	// any value in it, take no more memory than the file may inflate to:
	// about 2.4 million. A sample as written is over 98 bytes before its
	// values (the longest trial of a 50-member set holds 360,000).
	MaxSampleRecords = MaxInflatedBytes / int64(unsafe.Sizeof(Sample{}))
	// MaxEventRecords is events.jsonl.gz's: a trial's events are its
	// phases, its kills (at most one a storm query or merge op), and new
	// primaries, restarts and faults (at most one a member's sample each);
	// like the samples, no more records than fit, as Events of 112 bytes,
	// in what the file may inflate to: about 2.4 million.
	MaxEventRecords = MaxInflatedBytes / int64(unsafe.Sizeof(Event{}))
)

// RecordLimit is the limit on the records the .jsonl.gz file at path
// holds, by its name (as many as fit in its inflated limit at 64 bytes a
// record for a name that is none of a trial's files).
func RecordLimit(path string) int64 {
	switch filepath.Base(path) {
	case SeriesFile, OutcomesFile:
		return MaxSecondRecords
	case StormFile:
		return MaxStormRecords
	case CanaryFile:
		return MaxCanaryRecords
	case MergeFile:
		return MaxMergeRecords
	case SamplesFile:
		return MaxSampleRecords
	case EventsFile:
		return MaxEventRecords
	}
	return InflatedLimit(path) / 64
}

// tooManyRecords is the refusal of a file holding more than limit records.
func tooManyRecords(path string, limit int64) error {
	return fmt.Errorf("%s holds more than %d records, more than a trial's %s holds: %w", path, limit, filepath.Base(path), ErrTooLarge)
}

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
