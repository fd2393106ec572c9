package ftdc

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// BSON element type bytes this package needs to tell apart.
const (
	bsonDouble     = 0x01
	bsonString     = 0x02
	bsonDocument   = 0x03
	bsonArray      = 0x04
	bsonBinary     = 0x05
	bsonUndefined  = 0x06
	bsonObjectID   = 0x07
	bsonBool       = 0x08
	bsonDateTime   = 0x09
	bsonNull       = 0x0A
	bsonRegex      = 0x0B
	bsonDBPointer  = 0x0C
	bsonJavaScript = 0x0D
	bsonSymbol     = 0x0E
	bsonCodeScope  = 0x0F
	bsonInt32      = 0x10
	bsonTimestamp  = 0x11
	bsonInt64      = 0x12
	bsonDecimal128 = 0x13
	bsonMinKey     = 0xFF
	bsonMaxKey     = 0x7F
)

// docBody checks the framing of one BSON document that must fill doc
// exactly, and returns the bytes of its elements (no length prefix, no
// trailing NUL).
func docBody(doc []byte) ([]byte, error) {
	if len(doc) < 5 {
		return nil, fmt.Errorf("%w: BSON document of %d bytes", ErrCorrupt, len(doc))
	}
	n := int64(int32(binary.LittleEndian.Uint32(doc)))
	if n != int64(len(doc)) {
		return nil, fmt.Errorf("%w: BSON document declares %d bytes but has %d", ErrCorrupt, n, len(doc))
	}
	if doc[n-1] != 0 {
		return nil, fmt.Errorf("%w: BSON document does not end in NUL", ErrCorrupt)
	}
	return doc[4 : n-1], nil
}

// leadingDoc returns the BSON document at the start of b (which may hold
// more bytes after it).
func leadingDoc(b []byte) ([]byte, error) {
	if len(b) < 5 {
		return nil, fmt.Errorf("%w: %d bytes cannot hold a BSON document", ErrCorrupt, len(b))
	}
	n := int64(int32(binary.LittleEndian.Uint32(b)))
	if n < 5 || n > int64(len(b)) {
		return nil, fmt.Errorf("%w: BSON document declares %d bytes, %d available", ErrCorrupt, n, len(b))
	}
	return b[:n], nil
}

// element is one parsed BSON element; key and val alias the input.
type element struct {
	typ byte
	key []byte
	val []byte
}

// nextElement parses the element at the start of body and returns it and
// the bytes after it. Every length is checked against the bytes present,
// so hostile input can only produce an error.
func nextElement(body []byte) (element, []byte, error) {
	var e element
	if len(body) < 2 {
		return e, nil, fmt.Errorf("%w: truncated BSON element", ErrCorrupt)
	}
	e.typ = body[0]
	k := indexNUL(body[1:])
	if k < 0 {
		return e, nil, fmt.Errorf("%w: BSON key without NUL", ErrCorrupt)
	}
	e.key = body[1 : 1+k]
	rest := body[2+k:]
	n, err := valueSize(e.typ, rest)
	if err != nil {
		return e, nil, err
	}
	e.val = rest[:n]
	return e, rest[n:], nil
}

func indexNUL(b []byte) int { return bytes.IndexByte(b, 0) }

// valueSize is the size of a value of BSON type typ at the start of b.
func valueSize(typ byte, b []byte) (int, error) {
	n := 0
	switch typ {
	case bsonDouble, bsonDateTime, bsonInt64, bsonTimestamp:
		n = 8
	case bsonInt32:
		n = 4
	case bsonDecimal128:
		n = 16
	case bsonObjectID:
		n = 12
	case bsonBool:
		n = 1
	case bsonUndefined, bsonNull, bsonMinKey, bsonMaxKey:
		return 0, nil
	case bsonString, bsonJavaScript, bsonSymbol:
		return stringSize(b)
	case bsonDocument, bsonArray, bsonCodeScope:
		if len(b) < 4 {
			return 0, fmt.Errorf("%w: truncated BSON document length", ErrCorrupt)
		}
		l := int64(int32(binary.LittleEndian.Uint32(b)))
		if l < 5 || l > int64(len(b)) || b[l-1] != 0 && typ != bsonCodeScope {
			return 0, fmt.Errorf("%w: bad BSON document length %d", ErrCorrupt, l)
		}
		return int(l), nil
	case bsonBinary:
		if len(b) < 4 {
			return 0, fmt.Errorf("%w: truncated BSON binary length", ErrCorrupt)
		}
		l := int64(int32(binary.LittleEndian.Uint32(b)))
		if l < 0 || 5+l > int64(len(b)) {
			return 0, fmt.Errorf("%w: bad BSON binary length %d", ErrCorrupt, l)
		}
		return int(5 + l), nil
	case bsonRegex:
		a := indexNUL(b)
		if a < 0 {
			return 0, fmt.Errorf("%w: truncated BSON regex", ErrCorrupt)
		}
		o := indexNUL(b[a+1:])
		if o < 0 {
			return 0, fmt.Errorf("%w: truncated BSON regex", ErrCorrupt)
		}
		return a + o + 2, nil
	case bsonDBPointer:
		n, err := stringSize(b)
		if err != nil {
			return 0, err
		}
		if len(b) < n+12 {
			return 0, fmt.Errorf("%w: truncated BSON DBPointer", ErrCorrupt)
		}
		return n + 12, nil
	default:
		return 0, fmt.Errorf("%w: unknown BSON type 0x%02x", ErrCorrupt, typ)
	}
	if len(b) < n {
		return 0, fmt.Errorf("%w: truncated BSON value of type 0x%02x", ErrCorrupt, typ)
	}
	return n, nil
}

// stringSize is the size of a BSON string: int32 length, bytes, NUL.
func stringSize(b []byte) (int, error) {
	if len(b) < 4 {
		return 0, fmt.Errorf("%w: truncated BSON string", ErrCorrupt)
	}
	l := int64(int32(binary.LittleEndian.Uint32(b)))
	if l < 1 || 4+l > int64(len(b)) || b[4+l-1] != 0 {
		return 0, fmt.Errorf("%w: bad BSON string length %d", ErrCorrupt, l)
	}
	return int(4 + l), nil
}

// lookupTop finds the first top-level element named key in a framed
// document.
func lookupTop(doc []byte, key string) (element, bool, error) {
	body, err := docBody(doc)
	if err != nil {
		return element{}, false, err
	}
	for len(body) > 0 {
		var e element
		e, body, err = nextElement(body)
		if err != nil {
			return element{}, false, err
		}
		if string(e.key) == key {
			return e, true, nil
		}
	}
	return element{}, false, nil
}
