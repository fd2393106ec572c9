package query

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Pipelines and filters come from any client: no bytes may crash the
// compiler, and a compiled pipeline runs on a few documents without
// panicking (errors are fine).
func FuzzCompile(f *testing.F) {
	for _, p := range []bson.D{
		{{Key: "$match", Value: bson.D{{Key: "v", Value: bson.D{{Key: "$gt", Value: 3}}}}}},
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$p"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}},
		{{Key: "$setWindowFields", Value: bson.D{{Key: "partitionBy", Value: "$p"}, {Key: "sortBy", Value: bson.D{{Key: "v", Value: 1}}},
			{Key: "output", Value: bson.D{{Key: "r", Value: bson.D{{Key: "$sum", Value: "$v"}}}}}}}},
		{{Key: "$sort", Value: bson.D{{Key: "v", Value: -1}}}},
		{{Key: "$project", Value: bson.D{{Key: "v", Value: 1}, {Key: "w", Value: "$v"}}}},
	} {
		b, _ := bson.Marshal(p)
		f.Add(b)
	}
	docs := []bson.Raw{}
	for i := range 5 {
		b, _ := bson.Marshal(bson.D{{Key: "_id", Value: i}, {Key: "p", Value: i % 2}, {Key: "v", Value: i * 3}, {Key: "s", Value: "x"}})
		docs = append(docs, b)
	}
	// Any bytes at all: the compiler checks its input itself.
	f.Fuzz(func(t *testing.T, stage []byte) {
		if fl, err := CompileFilter(stage); err == nil && fl != nil {
			for _, d := range docs {
				fl.Match(d)
			}
		}
		p, err := Compile("db", []bson.Raw{stage})
		if err != nil {
			return
		}
		_, _ = p.Run(&memEnv{}, docs)
	})
}
