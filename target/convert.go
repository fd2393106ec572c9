package target

import (
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// typedLike converts a YAML parameter value to the type the server holds
// it in (setParameter rejects a string for a numeric parameter).
func typedLike(old bson.RawValue, value string) any {
	switch old.Type {
	case bson.TypeBoolean:
		if b, err := strconv.ParseBool(value); err == nil {
			return b
		}
	case bson.TypeInt32:
		if n, err := strconv.ParseInt(value, 10, 32); err == nil {
			return int32(n)
		}
	case bson.TypeInt64:
		if n, err := strconv.ParseInt(value, 10, 64); err == nil {
			return n
		}
	case bson.TypeDouble:
		if f, err := strconv.ParseFloat(value, 64); err == nil {
			return f
		}
	}
	if n, err := strconv.ParseInt(value, 10, 64); err == nil {
		return n
	}
	if b, err := strconv.ParseBool(value); err == nil {
		return b
	}
	return value
}

// plain is a parameter value as a user writes it ("70", "true", "abc"),
// not as extended JSON ({"$numberLong":"70"}).
func plain(v bson.RawValue) string {
	switch v.Type {
	case bson.TypeString:
		return v.StringValue()
	case bson.TypeBoolean:
		return strconv.FormatBool(v.Boolean())
	case bson.TypeInt32, bson.TypeInt64:
		n, _ := v.AsInt64OK()
		return strconv.FormatInt(n, 10)
	case bson.TypeDouble:
		return strconv.FormatFloat(v.Double(), 'g', -1, 64)
	}
	return v.String()
}
