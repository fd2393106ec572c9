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
	return fmt.Sprintf("%s: document at offset %d: %v", name, e.Offset, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// IsTruncated reports whether err is (or wraps) a torn final document.
func IsTruncated(err error) bool { return errors.Is(err, ErrTruncated) }
