package ftdc

import (
	"errors"
	"fmt"
)

var (
	// ErrTruncated marks a document cut short by the end of its file or
	// stream: the torn last write of a process that stopped mid-write.
	// Everything before it was read; callers may accept the partial data.
	ErrTruncated = errors.New("ftdc: truncated document")

	// ErrCorrupt marks bytes that are not valid FTDC.
	ErrCorrupt = errors.New("ftdc: corrupt data")

	// ErrTooLarge marks a declared size or count beyond this package's
	// bounds (see the package documentation); nothing was allocated for it.
	ErrTooLarge = errors.New("ftdc: exceeds decoder bounds")

	// ErrNotFTDC marks a file whose first document cannot be read and
	// does not begin as an FTDC document does ({_id: Date, ...}): a file
	// that is not FTDC at all (a README, a log) rather than a damaged one.
	// It wraps the error the first document met.
	ErrNotFTDC = errors.New("not an FTDC file")

	// ErrMetricCount marks a chunk whose header metric count differs from
	// the number of metrics in its reference document; mongod rejects such
	// chunks too. It wraps ErrCorrupt.
	ErrMetricCount = fmt.Errorf("%w: metric count does not match reference document", ErrCorrupt)
)

// Error locates a failure: the file (empty for an unnamed stream) and the
// byte offset of the FTDC document in it. Test its cause with errors.Is
// against ErrTruncated, ErrCorrupt or ErrTooLarge.
type Error struct {
	File   string
	Offset int64
	Err    error
}

func (e *Error) Error() string {
	name := e.File
	if name == "" {
		name = "<stream>"
	}
	if errors.Is(e.Err, ErrNotFTDC) {
		return fmt.Sprintf("%s: %v", name, e.Err)
	}
	return fmt.Sprintf("%s: document at offset %d: %v", name, e.Offset, e.Err)
}

// notFTDCError is the failure of a file's first document when the file
// does not begin as FTDC does: the file is no FTDC, whatever the failure.
type notFTDCError struct{ cause error }

func (e *notFTDCError) Error() string {
	return ErrNotFTDC.Error() + " (it does not begin with an FTDC document, {_id: <date>, type: …})"
}

func (e *notFTDCError) Unwrap() []error { return []error{ErrNotFTDC, e.cause} }

// ftdcStart is how every FTDC document begins after its length: its
// _id, a BSON date (mongod and this package's writer put it first).
var ftdcStart = []byte("\x09_id\x00")

func (e *Error) Unwrap() error { return e.Err }

// IsTruncated reports whether err is (or wraps) a torn final document.
func IsTruncated(err error) bool { return errors.Is(err, ErrTruncated) }
