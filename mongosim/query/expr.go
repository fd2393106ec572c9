package query

import (
	"math"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
)

// Expr is a compiled aggregation expression.
type Expr interface {
	Eval(doc bson.Raw) bson.RawValue
}

type fieldExpr string

func (f fieldExpr) Eval(doc bson.Raw) bson.RawValue { return Lookup(doc, string(f)) }

type literalExpr bson.RawValue

func (l literalExpr) Eval(bson.Raw) bson.RawValue { return bson.RawValue(l) }

type objectExpr struct {
	keys  []string
	exprs []Expr
}

func (o objectExpr) Eval(doc bson.Raw) bson.RawValue {
	vals := make([]bson.RawValue, len(o.exprs))
	for i, e := range o.exprs {
		vals[i] = e.Eval(doc)
	}
	return Doc(Build(o.keys, vals))
}

type arithExpr struct {
	op   string
	args []Expr
}

func (a arithExpr) Eval(doc bson.Raw) bson.RawValue {
	var acc sumAcc
	prod, first := 1.0, true
	for _, e := range a.args {
		v := e.Eval(doc)
		if !IsNumber(v) {
			return Null
		}
		switch a.op {
		case "$add":
			acc.add(v)
		case "$multiply":
			prod *= Float(v)
		case "$subtract":
			if first {
				prod = Float(v)
			} else {
				prod -= Float(v)
			}
		}
		first = false
	}
	if a.op == "$add" {
		return acc.value()
	}
	if prod == math.Trunc(prod) && math.Abs(prod) < 1<<53 {
		return Int64(int64(prod))
	}
	return Double(prod)
}

// CompileExpr compiles a field path ("$a.b"), a literal, {$literal: v}, an
// object of expressions, or one of $add, $subtract, $multiply.
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
			return fieldExpr(s[1:]), nil
		}
		return literalExpr(v), nil
	case bson.TypeEmbeddedDocument:
		d, ok := v.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.InvalidBSON, "malformed object in an expression")
		}
		elems, err := d.Elements()
		if err != nil {
			return nil, mongoerr.New(mongoerr.InvalidBSON, "malformed object in an expression: %v", err)
		}
		if len(elems) == 1 && strings.HasPrefix(elems[0].Key(), "$") {
			op, arg := elems[0].Key(), elems[0].Value()
			switch op {
			case "$literal":
				return literalExpr(arg), nil
			case "$add", "$subtract", "$multiply":
				arr, ok := arg.ArrayOK()
				if !ok {
					return nil, mongoerr.New(mongoerr.BadValue, "%s takes an array of expressions", op)
				}
				vals, _ := arr.Values()
				ae := arithExpr{op: op}
				for _, av := range vals {
					e, err := CompileExpr(av)
					if err != nil {
						return nil, err
					}
					ae.args = append(ae.args, e)
				}
				return ae, nil
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

// sumAcc adds numbers the way $sum does: integers stay integers (int32 while
// they fit, then int64) until a double arrives.
type sumAcc struct {
	i       int64
	f       float64
	n       int
	double  bool
	wide    bool
	nonZero bool
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
