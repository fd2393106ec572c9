package query

import (
	"math"
	"math/bits"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
)

// Expr is a compiled aggregation expression. Eval fails when the document's
// values make the expression an error in mongod (a string in $multiply).
type Expr interface {
	Eval(doc bson.Raw) (bson.RawValue, error)
}

type fieldExpr []string

func (f fieldExpr) Eval(doc bson.Raw) (bson.RawValue, error) { return aggPath(Doc(doc), f), nil }

type literalExpr bson.RawValue

func (l literalExpr) Eval(bson.Raw) (bson.RawValue, error) { return bson.RawValue(l), nil }

type objectExpr struct {
	keys  []string
	exprs []Expr
}

func (o objectExpr) Eval(doc bson.Raw) (bson.RawValue, error) {
	vals := make([]bson.RawValue, len(o.exprs))
	for i, e := range o.exprs {
		v, err := e.Eval(doc)
		if err != nil {
			return Missing, err
		}
		vals[i] = v
	}
	return Doc(Build(o.keys, vals)), nil
}

type arrayExpr []Expr

func (a arrayExpr) Eval(doc bson.Raw) (bson.RawValue, error) {
	vals := make([]bson.RawValue, len(a))
	for i, e := range a {
		v, err := e.Eval(doc)
		if err != nil {
			return Missing, err
		}
		if v.Type == 0 {
			v = Null
		}
		vals[i] = v
	}
	return Array(vals), nil
}

type arithExpr struct {
	op   string
	args []Expr
}

// arithCodes are mongod's codes for a non-numeric operand: current
// mongod answers TypeMismatch for $multiply, $subtract and $divide (4.x
// had the location codes 16555, 16556, 16609); $add keeps 16554.
var arithCodes = map[string]int32{"$add": 16554, "$multiply": mongoerr.TypeMismatch, "$subtract": mongoerr.TypeMismatch, "$divide": mongoerr.TypeMismatch}

func (a arithExpr) Eval(doc bson.Raw) (bson.RawValue, error) {
	vals := make([]bson.RawValue, len(a.args))
	null := false
	for i, e := range a.args {
		v, err := e.Eval(doc)
		if err != nil {
			return Missing, err
		}
		switch {
		case v.Type == 0 || v.Type == bson.TypeNull || v.Type == bson.TypeUndefined:
			null = true
		case v.Type == bson.TypeDecimal128 || v.Type == bson.TypeDateTime:
			return Missing, notImplemented(a.op + " of a " + v.Type.String())
		case !IsNumber(v):
			return Missing, mongoerr.New(arithCodes[a.op], "%s only supports numeric types, not %s", a.op, v.Type)
		}
		vals[i] = v
	}
	if null {
		return Null, nil
	}
	switch a.op {
	case "$divide":
		d := Float(vals[1])
		if d == 0 {
			return Missing, mongoerr.New(mongoerr.BadValue, "can't $divide by zero")
		}
		return Double(Float(vals[0]) / d), nil
	case "$subtract":
		return arith(vals[0], vals[1], '-'), nil
	}
	acc := Int32(0)
	if a.op == "$multiply" {
		acc = Int32(1)
	}
	for _, v := range vals {
		if a.op == "$add" {
			acc = arith(acc, v, '+')
		} else {
			acc = arith(acc, v, '*')
		}
	}
	return acc, nil
}

// floatArith applies + - or * to doubles.
func floatArith(a, b float64, op byte) bson.RawValue {
	switch op {
	case '+':
		return Double(a + b)
	case '-':
		return Double(a - b)
	}
	return Double(a * b)
}

// arith applies + - or * with mongod's numeric promotion: any double makes
// a double; two int32s stay int32 unless the result overflows it (then
// int64); int64 stays int64 unless the result overflows it (then double).
func arith(x, y bson.RawValue, op byte) bson.RawValue {
	if x.Type == bson.TypeDouble || y.Type == bson.TypeDouble {
		return floatArith(Float(x), Float(y), op)
	}
	a, _ := x.AsInt64OK()
	b, _ := y.AsInt64OK()
	r, overflow := int64(0), false
	switch op {
	case '+':
		r = a + b
		overflow = (a >= 0) == (b >= 0) && (r >= 0) != (a >= 0)
	case '-':
		r = a - b
		overflow = (a >= 0) != (b >= 0) && (r >= 0) != (a >= 0)
	default:
		hi, lo := bits.Mul64(uint64(absInt(a)), uint64(absInt(b)))
		overflow = hi != 0 || lo > math.MaxInt64 || a == math.MinInt64 || b == math.MinInt64
		r = a * b
	}
	if overflow {
		return floatArith(float64(a), float64(b), op)
	}
	if x.Type == bson.TypeInt32 && y.Type == bson.TypeInt32 && r == int64(int32(r)) {
		return Int32(int32(r))
	}
	return Int64(r)
}

func absInt(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// knownExpressions are expression operators mongod has and mongosim does
// not evaluate: refused with NotImplemented, not as unrecognized.
var knownExpressions = map[string]bool{
	"$abs": true, "$and": true, "$or": true, "$not": true, "$cond": true, "$switch": true,
	"$concat": true, "$substr": true, "$substrCP": true, "$toUpper": true, "$toLower": true, "$strLenCP": true,
	"$eq": true, "$ne": true, "$gt": true, "$gte": true, "$lt": true, "$lte": true, "$cmp": true,
	"$mod": true, "$floor": true, "$ceil": true, "$round": true, "$trunc": true, "$sqrt": true, "$pow": true,
	"$size": true, "$arrayElemAt": true, "$filter": true, "$map": true, "$reduce": true, "$in": true,
	"$concatArrays": true, "$slice": true, "$sum": true, "$avg": true, "$min": true, "$max": true,
	"$toString": true, "$toInt": true, "$toLong": true, "$toDouble": true, "$convert": true, "$type": true,
	"$dateToString": true, "$year": true, "$month": true, "$dayOfMonth": true, "$let": true, "$mergeObjects": true,
	"$objectToArray": true, "$arrayToObject": true, "$rand": true, "$isArray": true, "$split": true,
}

// isExpressionName reports whether op is an expression operator mongod
// knows, implemented here or not.
func isExpressionName(op string) bool {
	switch op {
	case "$literal", "$add", "$subtract", "$multiply", "$divide", "$ifNull":
		return true
	}
	return knownExpressions[op]
}

// CompileExpr compiles a field path ("$a.b"), a literal, {$literal: v}, an
// object or array of expressions, or one of $add, $subtract, $multiply,
// $divide, $ifNull. Other operators mongod knows are refused with NotImplemented;
// unknown ones with InvalidPipelineOperator, as mongod refuses them.
func CompileExpr(v bson.RawValue) (Expr, error) {
	switch v.Type {
	case bson.TypeString:
		s, ok := v.StringValueOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.InvalidBSON, "malformed string in an expression")
		}
		if strings.HasPrefix(s, "$$") {
			return nil, mongoerr.New(17276, "Use of undefined variable: %s", strings.TrimPrefix(s, "$$"))
		}
		if strings.HasPrefix(s, "$") {
			if len(s) == 1 {
				return nil, mongoerr.New(16872, "'$' by itself is not a valid FieldPath")
			}
			return fieldExpr(splitPath(s[1:])), nil
		}
		return literalExpr(v), nil
	case bson.TypeArray:
		vals, _ := v.Array().Values()
		var a arrayExpr
		for _, av := range vals {
			e, err := CompileExpr(av)
			if err != nil {
				return nil, err
			}
			a = append(a, e)
		}
		return a, nil
	case bson.TypeEmbeddedDocument:
		d, ok := v.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.InvalidBSON, "malformed object in an expression")
		}
		elems, err := d.Elements()
		if err != nil {
			return nil, mongoerr.New(mongoerr.InvalidBSON, "malformed object in an expression: %v", err)
		}
		if len(elems) > 0 && strings.HasPrefix(elems[0].Key(), "$") {
			if len(elems) > 1 {
				return nil, mongoerr.New(15983, "an expression specification must contain exactly one field, the name of the expression. Found %d fields", len(elems))
			}
			op, arg := elems[0].Key(), elems[0].Value()
			switch op {
			case "$literal":
				return literalExpr(arg), nil
			case "$add", "$subtract", "$multiply", "$divide":
				var vals []bson.RawValue
				if arr, ok := arg.ArrayOK(); ok {
					vals, _ = arr.Values()
				} else {
					vals = []bson.RawValue{arg}
				}
				if (op == "$subtract" || op == "$divide") && len(vals) != 2 {
					return nil, mongoerr.New(16020, "Expression %s takes exactly 2 arguments. %d were passed in.", op, len(vals))
				}
				ae := arithExpr{op: op}
				for _, av := range vals {
					e, err := CompileExpr(av)
					if err != nil {
						return nil, err
					}
					ae.args = append(ae.args, e)
				}
				return ae, nil
			case "$ifNull":
				return compileIfNull(arg)
			}
			if knownExpressions[op] {
				return nil, notImplemented("the expression " + op)
			}
			return nil, mongoerr.New(mongoerr.InvalidPipelineOperator, "Unrecognized expression '%s'", op)
		}
		o := objectExpr{}
		for _, e := range elems {
			sub, err := CompileExpr(e.Value())
			if err != nil {
				return nil, err
			}
			o.keys, o.exprs = append(o.keys, e.Key()), append(o.exprs, sub)
		}
		return o, nil
	}
	return literalExpr(v), nil
}

// ifNullExpr is {$ifNull: [e1, ..., replacement]}: the first of e1... whose
// value is not nullish (null, undefined or missing), else the replacement's
// value as it is (missing stays missing). Later arguments are evaluated only
// when the earlier ones were nullish, so an error there cannot surface
// after a non-null value.
type ifNullExpr []Expr

// compileIfNull takes the argument array (a single non-array argument is
// one argument, as for every expression) and needs at least two: mongod
// (5.0+, which allows more than two) refuses fewer with 1257300.
func compileIfNull(arg bson.RawValue) (Expr, error) {
	vals := []bson.RawValue{arg}
	if arr, ok := arg.ArrayOK(); ok {
		vals, _ = arr.Values()
	}
	if len(vals) < 2 {
		return nil, mongoerr.New(1257300, "$ifNull needs at least two arguments, had: %d", len(vals))
	}
	e := make(ifNullExpr, len(vals))
	for i, v := range vals {
		sub, err := CompileExpr(v)
		if err != nil {
			return nil, err
		}
		e[i] = sub
	}
	return e, nil
}

func (e ifNullExpr) Eval(doc bson.Raw) (bson.RawValue, error) {
	for i, sub := range e {
		v, err := sub.Eval(doc)
		if err != nil {
			return Missing, err
		}
		if !nullish(v) || i == len(e)-1 {
			return v, nil
		}
	}
	return Missing, nil
}

// nullish reports whether v is null, undefined or missing, the values
// expressions such as $ifNull treat as absent.
func nullish(v bson.RawValue) bool {
	return v.Type == 0 || v.Type == bson.TypeNull || v.Type == bson.TypeUndefined
}

// sumAcc adds numbers the way $sum does: integers stay integers (int32 while
// they fit, then int64) until a double arrives.
type sumAcc struct {
	i      int64
	f      float64
	n      int
	double bool
	wide   bool
}

func (s *sumAcc) add(v bson.RawValue) {
	if !IsNumber(v) {
		return
	}
	s.n++
	switch v.Type {
	case bson.TypeDouble:
		s.double = true
		s.f += v.Double()
	case bson.TypeInt64:
		s.wide = true
		s.i += v.Int64()
	default:
		s.i += int64(v.Int32())
	}
}

func (s *sumAcc) value() bson.RawValue {
	switch {
	case s.double:
		return Double(s.f + float64(s.i))
	case s.wide || s.i > math.MaxInt32 || s.i < math.MinInt32:
		return Int64(s.i)
	}
	return Int32(int32(s.i))
}

func (s *sumAcc) avg() bson.RawValue {
	if s.n == 0 {
		return Null
	}
	return Double((s.f + float64(s.i)) / float64(s.n))
}
