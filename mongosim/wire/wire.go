// Package wire frames MongoDB wire-protocol messages for mongosim: it reads
// OP_QUERY and OP_MSG requests, writes OP_REPLY and OP_MSG replies, and gives
// the simulator's members a small client to talk to each other.
//
// Framing uses the Go driver's x/mongo/driver/wiremessage helpers (pinned with
// the driver version); every document is checked at every depth before it is
// handed on (internal/bsoncheck: the driver's Validate looks only at top-level
// lengths), so a malformed or hostile message yields an error, never a panic,
// and the commands reading it may trust each value's form.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/qmlsab/qmlsab/internal/bsoncheck"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/wiremessage"
)

// MaxMessageSize is the largest message mongod accepts (maxMessageSizeBytes).
const MaxMessageSize = 48000000

// headerSize is the length of the standard message header.
const headerSize = 16

// Message flag bits of OP_MSG.
const (
	FlagChecksumPresent = wiremessage.ChecksumPresent
	FlagMoreToCome      = wiremessage.MoreToCome
	FlagExhaustAllowed  = wiremessage.ExhaustAllowed
)

// OpCode is a wire-protocol opcode.
type OpCode = wiremessage.OpCode

// Opcodes the simulator speaks.
const (
	OpReply = wiremessage.OpReply
	OpQuery = wiremessage.OpQuery
	OpMsg   = wiremessage.OpMsg
)

// ErrMalformed reports a message that does not follow the protocol; the
// connection that sent it is closed.
var ErrMalformed = errors.New("malformed wire message")

// Sequence is an OP_MSG kind-1 section: a named run of documents.
type Sequence struct {
	Identifier string
	Docs       []bsoncore.Document
}

// Message is one parsed request or reply.
type Message struct {
	RequestID  int32
	ResponseTo int32
	OpCode     wiremessage.OpCode

	// OP_MSG
	Flags     wiremessage.MsgFlag
	Body      bsoncore.Document
	Sequences []Sequence

	// OP_QUERY
	FullCollectionName string
	QueryFlags         wiremessage.QueryFlag
	Query              bsoncore.Document

	// OP_REPLY
	Documents []bsoncore.Document
}

// MoreToCome reports whether the sender expects no reply (OP_MSG only).
func (m *Message) MoreToCome() bool { return m.OpCode == OpMsg && m.Flags&FlagMoreToCome != 0 }

// ExhaustAllowed reports whether the client accepts a streamed reply.
func (m *Message) ExhaustAllowed() bool { return m.OpCode == OpMsg && m.Flags&FlagExhaustAllowed != 0 }

// Read reads one whole message from r. buf is reused when large enough; the
// returned Message aliases it. Lengths outside (header, MaxMessageSize] are
// rejected before any body is read.
func Read(r io.Reader, buf []byte) (Message, []byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return Message{}, buf, err
	}
	n := int32(binary.LittleEndian.Uint32(hdr[:]))
	if n < headerSize || n > MaxMessageSize {
		return Message{}, buf, fmt.Errorf("%w: message length %d", ErrMalformed, n)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	copy(buf, hdr[:])
	if _, err := io.ReadFull(r, buf[4:]); err != nil {
		return Message{}, buf, err
	}
	m, err := Parse(buf)
	return m, buf, err
}

// Parse decodes a complete message (header included).
func Parse(b []byte) (Message, error) {
	length, reqID, respTo, op, rem, ok := wiremessage.ReadHeader(b)
	if !ok || int(length) != len(b) || length < headerSize {
		return Message{}, fmt.Errorf("%w: bad header", ErrMalformed)
	}
	m := Message{RequestID: reqID, ResponseTo: respTo, OpCode: op}
	switch op {
	case OpMsg:
		return m, parseMsg(&m, rem)
	case OpQuery:
		return m, parseQuery(&m, rem)
	case OpReply:
		return m, parseReply(&m, rem)
	default:
		return m, fmt.Errorf("%w: unsupported opcode %d", ErrMalformed, op)
	}
}

func parseMsg(m *Message, rem []byte) error {
	flags, rem, ok := wiremessage.ReadMsgFlags(rem)
	if !ok {
		return fmt.Errorf("%w: OP_MSG flags", ErrMalformed)
	}
	// Required bits other than the three defined ones must make the message
	// fail (the spec reserves bits 0-15 as required).
	if flags&0xFFFF&^(FlagChecksumPresent|FlagMoreToCome) != 0 {
		return fmt.Errorf("%w: unknown required OP_MSG flag bits %#x", ErrMalformed, uint32(flags))
	}
	m.Flags = flags
	if flags&FlagChecksumPresent != 0 {
		// The CRC-32C trails the sections. mongod verifies it; drivers only
		// send one on request, and a simulator loses nothing by ignoring it
		// once it is cut off so it is never parsed as a section.
		if len(rem) < 4 {
			return fmt.Errorf("%w: checksum flag without checksum", ErrMalformed)
		}
		rem = rem[:len(rem)-4]
	}
	for len(rem) > 0 {
		kind, r, ok := wiremessage.ReadMsgSectionType(rem)
		if !ok {
			return fmt.Errorf("%w: section kind", ErrMalformed)
		}
		switch kind {
		case wiremessage.SingleDocument:
			if m.Body != nil {
				return fmt.Errorf("%w: two body sections", ErrMalformed)
			}
			doc, r2, ok := wiremessage.ReadMsgSectionSingleDocument(r)
			if !ok || bsoncheck.Document(doc) != nil {
				return fmt.Errorf("%w: body document", ErrMalformed)
			}
			m.Body, rem = doc, r2
		case wiremessage.DocumentSequence:
			seq, r2, err := readSequence(r)
			if err != nil {
				return err
			}
			m.Sequences = append(m.Sequences, seq)
			rem = r2
		default:
			return fmt.Errorf("%w: section kind %d", ErrMalformed, kind)
		}
	}
	if m.Body == nil {
		return fmt.Errorf("%w: OP_MSG without a body section", ErrMalformed)
	}
	return nil
}

// readSequence reads a kind-1 section by hand: the driver's helper trusts the
// declared sizes, and a hostile size must not make us read out of range.
func readSequence(src []byte) (Sequence, []byte, error) {
	if len(src) < 4 {
		return Sequence{}, nil, fmt.Errorf("%w: sequence size", ErrMalformed)
	}
	size := int(int32(binary.LittleEndian.Uint32(src)))
	if size < 5 || size > len(src) {
		return Sequence{}, nil, fmt.Errorf("%w: sequence size %d", ErrMalformed, size)
	}
	body, rest := src[4:size], src[size:]
	id, body, ok := readCString(body)
	if !ok {
		return Sequence{}, nil, fmt.Errorf("%w: sequence identifier", ErrMalformed)
	}
	seq := Sequence{Identifier: id}
	for len(body) > 0 {
		doc, r, ok := bsoncore.ReadDocument(body)
		if !ok || bsoncheck.Document(doc) != nil {
			return Sequence{}, nil, fmt.Errorf("%w: document in sequence %q", ErrMalformed, id)
		}
		seq.Docs = append(seq.Docs, doc)
		body = r
	}
	return seq, rest, nil
}

func readCString(b []byte) (string, []byte, bool) {
	for i, c := range b {
		if c == 0 {
			return string(b[:i]), b[i+1:], true
		}
	}
	return "", nil, false
}

func parseQuery(m *Message, rem []byte) error {
	var ok bool
	if m.QueryFlags, rem, ok = wiremessage.ReadQueryFlags(rem); !ok {
		return fmt.Errorf("%w: OP_QUERY flags", ErrMalformed)
	}
	if m.FullCollectionName, rem, ok = readCString(rem); !ok {
		return fmt.Errorf("%w: OP_QUERY collection name", ErrMalformed)
	}
	if len(rem) < 8 {
		return fmt.Errorf("%w: OP_QUERY skip/return", ErrMalformed)
	}
	rem = rem[8:]
	doc, rest, ok := bsoncore.ReadDocument(rem)
	if !ok || bsoncheck.Document(doc) != nil {
		return fmt.Errorf("%w: OP_QUERY query document", ErrMalformed)
	}
	m.Query = doc
	if len(rest) > 0 { // optional returnFieldsSelector
		sel, _, ok := bsoncore.ReadDocument(rest)
		if !ok || bsoncheck.Document(sel) != nil {
			return fmt.Errorf("%w: OP_QUERY field selector", ErrMalformed)
		}
	}
	return nil
}

func parseReply(m *Message, rem []byte) error {
	if len(rem) < 20 {
		return fmt.Errorf("%w: OP_REPLY prefix", ErrMalformed)
	}
	rem = rem[20:]
	for len(rem) > 0 {
		doc, r, ok := bsoncore.ReadDocument(rem)
		if !ok || bsoncheck.Document(doc) != nil {
			return fmt.Errorf("%w: OP_REPLY document", ErrMalformed)
		}
		m.Documents = append(m.Documents, doc)
		rem = r
	}
	return nil
}

// AppendMsg appends an OP_MSG with one body section.
func AppendMsg(dst []byte, reqID, respTo int32, flags wiremessage.MsgFlag, body []byte) []byte {
	idx, dst := wiremessage.AppendHeaderStart(dst, reqID, respTo, OpMsg)
	dst = wiremessage.AppendMsgFlags(dst, flags)
	dst = wiremessage.AppendMsgSectionType(dst, wiremessage.SingleDocument)
	dst = append(dst, body...)
	return bsoncore.UpdateLength(dst, idx, int32(len(dst[idx:])))
}

// AppendReply appends an OP_REPLY carrying one document, the answer to a
// legacy OP_QUERY handshake.
func AppendReply(dst []byte, reqID, respTo int32, doc []byte) []byte {
	idx, dst := wiremessage.AppendHeaderStart(dst, reqID, respTo, OpReply)
	dst = wiremessage.AppendReplyFlags(dst, wiremessage.AwaitCapable)
	dst = wiremessage.AppendReplyCursorID(dst, 0)
	dst = wiremessage.AppendReplyStartingFrom(dst, 0)
	dst = wiremessage.AppendReplyNumberReturned(dst, 1)
	dst = append(dst, doc...)
	return bsoncore.UpdateLength(dst, idx, int32(len(dst[idx:])))
}
