package ftdc

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Kind is the BSON type a metric was extracted from.
type Kind uint8

// Metric kinds. A Timestamp yields two metrics, KindTimestampT (seconds)
// followed by KindTimestampI (increment).
const (
	KindDouble Kind = iota + 1
	KindInt32
	KindInt64
	KindDecimal128
	KindBool
	KindDateTime
	KindTimestampT
	KindTimestampI
)

func (k Kind) String() string {
	switch k {
	case KindDouble:
		return "double"
	case KindInt32:
		return "int32"
	case KindInt64:
		return "int64"
	case KindDecimal128:
		return "decimal128"
	case KindBool:
		return "bool"
	case KindDateTime:
		return "date"
	case KindTimestampT:
		return "timestamp.t"
	case KindTimestampI:
		return "timestamp.i"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Metric names one column of a chunk: its dotted path in the reference
// document and the BSON type it came from.
type Metric struct {
	Path string
	Kind Kind
}

// MaxDepth is how deeply documents and arrays may nest below the top-level
// sample document, as in mongod: a sample nested deeper is refused by the
// Writer and a reference document nested deeper makes its chunk corrupt.
const MaxDepth = 10

// Shape-signature tokens (see flattener.sig).
const (
	sigNumber = 'n'
	sigBool   = 'b'
	sigDate   = 'd'
	sigTS     = 't'
	sigDoc    = 'o'
	sigArray  = 'a'
	sigEnd    = 'e'
)

// flattener extracts metrics from a BSON document in document order.
//
// It always appends the values; it appends the metric descriptions when
// paths is set and a shape signature (names and type classes of every
// metric-bearing element, with nesting) when sig is set. Two documents
// have the same FTDC schema exactly when their signatures are equal.
type flattener struct {
	values []int64

	paths     bool
	metrics   []Metric
	pathBytes int
	prefix    []byte

	sig    bool
	sigBuf []byte

	// limit, when not negative, is the most metrics accepted; more is an
	// error wrapping ErrTooLarge.
	limit int
}

func (f *flattener) reset() {
	f.values = f.values[:0]
	f.metrics = f.metrics[:0]
	f.pathBytes = 0
	f.prefix = f.prefix[:0]
	f.sigBuf = f.sigBuf[:0]
}

// flatten walks a framed BSON document.
func (f *flattener) flatten(doc []byte) error {
	body, err := docBody(doc)
	if err != nil {
		return err
	}
	return f.walk(body, 0)
}

var errDepth = fmt.Errorf("%w: documents nested deeper than %d levels", ErrCorrupt, MaxDepth)

func (f *flattener) walk(body []byte, depth int) error {
	if depth > MaxDepth {
		return errDepth
	}
	for len(body) > 0 {
		e, rest, err := nextElement(body)
		if err != nil {
			return err
		}
		body = rest
		switch e.typ {
		case bsonDouble:
			f.emit(e.key, "", KindDouble, sigNumber, doubleToInt64(math.Float64frombits(binary.LittleEndian.Uint64(e.val))))
		case bsonInt32:
			f.emit(e.key, "", KindInt32, sigNumber, int64(int32(binary.LittleEndian.Uint32(e.val))))
		case bsonInt64:
			f.emit(e.key, "", KindInt64, sigNumber, int64(binary.LittleEndian.Uint64(e.val)))
		case bsonDecimal128:
			lo := binary.LittleEndian.Uint64(e.val)
			hi := binary.LittleEndian.Uint64(e.val[8:])
			f.emit(e.key, "", KindDecimal128, sigNumber, decimalToInt64(bson.NewDecimal128(hi, lo)))
		case bsonBool:
			var v int64
			if e.val[0] != 0 {
				v = 1
			}
			f.emit(e.key, "", KindBool, sigBool, v)
		case bsonDateTime:
			f.emit(e.key, "", KindDateTime, sigDate, int64(binary.LittleEndian.Uint64(e.val)))
		case bsonTimestamp:
			// Stored as uint64 LE: increment in the low half, seconds in the high.
			inc := int64(binary.LittleEndian.Uint32(e.val))
			secs := int64(binary.LittleEndian.Uint32(e.val[4:]))
			f.emit(e.key, ".t", KindTimestampT, sigTS, secs)
			f.values = append(f.values, inc)
			if f.paths {
				f.addPath(e.key, ".i", KindTimestampI)
			}
		case bsonDocument, bsonArray:
			if depth+1 > MaxDepth {
				return errDepth
			}
			tok := byte(sigDoc)
			if e.typ == bsonArray {
				tok = sigArray
			}
			if f.sig {
				f.sigBuf = append(f.sigBuf, tok)
				f.sigBuf = append(f.sigBuf, e.key...)
				f.sigBuf = append(f.sigBuf, 0)
			}
			inner, err := docBody(e.val)
			if err != nil {
				return err
			}
			mark := len(f.prefix)
			if f.paths {
				f.prefix = append(f.prefix, e.key...)
				f.prefix = append(f.prefix, '.')
			}
			if err := f.walk(inner, depth+1); err != nil {
				return err
			}
			f.prefix = f.prefix[:mark]
			if f.sig {
				f.sigBuf = append(f.sigBuf, sigEnd)
			}
		default:
			// Strings, ObjectIds, binary, null and the rest carry no
			// metric and take no part in the schema.
		}
		if f.limit >= 0 && len(f.values) > f.limit {
			return fmt.Errorf("%w: more than %d metrics", ErrTooLarge, f.limit)
		}
		if f.pathBytes > MaxPathBytes {
			return fmt.Errorf("%w: metric paths longer than %d bytes in all", ErrTooLarge, MaxPathBytes)
		}
	}
	return nil
}

func (f *flattener) emit(key []byte, suffix string, k Kind, tok byte, v int64) {
	f.values = append(f.values, v)
	if f.sig {
		f.sigBuf = append(f.sigBuf, tok)
		f.sigBuf = append(f.sigBuf, key...)
		f.sigBuf = append(f.sigBuf, 0)
	}
	if f.paths {
		f.addPath(key, suffix, k)
	}
}

// MaxPathBytes bounds the total length of the metric paths of one chunk, so
// a reference document with long keys nested many times cannot make the
// decoder build gigabytes of path strings.
const MaxPathBytes = 16 << 20

func (f *flattener) addPath(key []byte, suffix string, k Kind) {
	n := len(f.prefix) + len(key) + len(suffix)
	f.pathBytes += n
	if f.pathBytes > MaxPathBytes {
		// Not built; walk reports the error after this element.
		f.metrics = append(f.metrics, Metric{Kind: k})
		return
	}
	b := make([]byte, 0, n)
	b = append(b, f.prefix...)
	b = append(b, key...)
	b = append(b, suffix...)
	f.metrics = append(f.metrics, Metric{Path: string(b), Kind: k})
}

// doubleToInt64 converts as mongod does: truncation toward zero, NaN to 0,
// out-of-range values clamped to the int64 range.
func doubleToInt64(d float64) int64 {
	switch {
	case d != d:
		return 0
	case d >= 9223372036854775807.0:
		return math.MaxInt64
	case d <= -9223372036854775808.0:
		return math.MinInt64
	}
	return int64(d)
}

var (
	bigMaxInt64 = big.NewInt(math.MaxInt64)
	bigMinInt64 = big.NewInt(math.MinInt64)
	bigTen      = big.NewInt(10)
)

// decimalToInt64 converts a Decimal128 to the nearest int64, ties to even
// (mongod's default rounding for the conversion), NaN to 0, out-of-range
// values clamped.
func decimalToInt64(d bson.Decimal128) int64 {
	if d.IsNaN() {
		return 0
	}
	switch d.IsInf() {
	case 1:
		return math.MaxInt64
	case -1:
		return math.MinInt64
	}
	coef, exp, err := d.BigInt()
	if err != nil || coef.Sign() == 0 {
		return 0
	}
	switch {
	case exp > 0:
		if exp > 19 { // |coef| >= 1, so |value| >= 10^20
			if coef.Sign() > 0 {
				return math.MaxInt64
			}
			return math.MinInt64
		}
		coef.Mul(coef, new(big.Int).Exp(bigTen, big.NewInt(int64(exp)), nil))
	case exp < 0:
		if exp < -40 { // |coef| < 10^34, so |value| < 10^-6
			return 0
		}
		div := new(big.Int).Exp(bigTen, big.NewInt(int64(-exp)), nil)
		q, r := new(big.Int).QuoRem(coef, div, new(big.Int))
		// Round half to even on the magnitude of the remainder.
		r2 := new(big.Int).Abs(r)
		r2.Lsh(r2, 1)
		if c := r2.Cmp(div); c > 0 || c == 0 && q.Bit(0) == 1 {
			if coef.Sign() > 0 {
				q.Add(q, big.NewInt(1))
			} else {
				q.Sub(q, big.NewInt(1))
			}
		}
		coef = q
	}
	if coef.Cmp(bigMaxInt64) > 0 {
		return math.MaxInt64
	}
	if coef.Cmp(bigMinInt64) < 0 {
		return math.MinInt64
	}
	return coef.Int64()
}
