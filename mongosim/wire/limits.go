package wire

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"golang.org/x/sync/semaphore"
)

// ReadLimits bound what reading one connection's messages may hold of a
// server, whoever sends them: the bytes of a message are held only once
// they have arrived, every connection of a listener draws on one budget
// for them, and a message that has begun must end within a deadline.
type ReadLimits struct {
	// Budget, when set, is shared by every connection of a listener: the
	// bytes of message bodies being read at once. A body larger than the
	// connection's read buffer reserves its buffer from the budget as it
	// grows (doubling as bytes arrive, so the reservation is at most
	// twice what has arrived; the half a grown buffer replaces is garbage)
	// and returns it once the message is read; a connection whose message
	// does not fit waits, until its deadline. It must hold at least
	// MinReadBudget bytes. Nil: no budget.
	Budget *semaphore.Weighted
	// Timeout is how long the rest of a message may take once its first
	// byte has arrived (waiting for the budget included); a connection
	// that has not sent it all by then is closed. Zero: no deadline. An
	// idle connection, between messages, has no deadline, as at mongod.
	Timeout time.Duration
}

// MinReadBudget is the least a ReadLimits.Budget may hold: a message of
// the largest size.
const MinReadBudget = MaxMessageSize

// firstChunk is the buffer a message larger than the read buffer starts
// with; it doubles from there.
const firstChunk = 64 << 10

// ErrMessageTimeout reports a message whose rest did not arrive within
// ReadLimits.Timeout of its first byte.
var ErrMessageTimeout = errors.New("message not complete within its deadline")

// ReadConn reads one whole message from br, the buffered reader of nc,
// within lim (see ReadLimits). ctx ends a wait for the budget (the
// server's shutdown). The returned Message owns its buffer.
//
// A message no larger than br's buffer is taken from it once it is all
// there, into a buffer of its exact size; a larger one grows its buffer
// only as its bytes arrive, so a header that claims 48 MB and then
// nothing costs nothing but br.
func ReadConn(ctx context.Context, nc net.Conn, br *bufio.Reader, lim ReadLimits) (Message, error) {
	// Idle: wait, without a deadline, for the next message to begin.
	if _, err := br.Peek(1); err != nil {
		return Message{}, err
	}
	if lim.Timeout > 0 {
		deadline := time.Now().Add(lim.Timeout)
		if err := nc.SetReadDeadline(deadline); err != nil {
			return Message{}, err
		}
		defer nc.SetReadDeadline(time.Time{})
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	b, err := readBody(ctx, br, lim)
	if err != nil {
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
			return Message{}, fmt.Errorf("%w (%v): %w", ErrMessageTimeout, lim.Timeout, err)
		}
		return Message{}, err
	}
	return Parse(b)
}

// readBody reads the length and then the rest of one message.
func readBody(ctx context.Context, br *bufio.Reader, lim ReadLimits) ([]byte, error) {
	lenBytes, err := br.Peek(4)
	if err != nil {
		return nil, err
	}
	n := int(int32(binary.LittleEndian.Uint32(lenBytes)))
	if n < headerSize || n > MaxMessageSize {
		return nil, fmt.Errorf("%w: message length %d", ErrMalformed, n)
	}
	if n <= br.Size() {
		whole, err := br.Peek(n)
		if err != nil {
			return nil, err
		}
		b := append(make([]byte, 0, n), whole...)
		_, _ = br.Discard(n)
		return b, nil
	}
	var buf []byte
	held := int64(0)
	defer func() {
		if lim.Budget != nil && held > 0 {
			lim.Budget.Release(held)
		}
	}()
	for len(buf) < n {
		if len(buf) == cap(buf) {
			// Grow only once the next byte is here.
			if _, err := br.Peek(1); err != nil {
				return nil, err
			}
			size := min(n, max(2*cap(buf), firstChunk))
			if lim.Budget != nil {
				if err := lim.Budget.Acquire(ctx, int64(size)-held); err != nil {
					return nil, fmt.Errorf("waiting for %d more bytes of the server's budget for incoming messages (a %d-byte message, %d bytes in): %w",
						int64(size)-held, n, len(buf), err)
				}
			}
			buf, held = append(make([]byte, 0, size), buf...), int64(size)
		}
		k, err := br.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if err != nil && len(buf) < n {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return buf, nil
}
