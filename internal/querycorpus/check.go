// Package querycorpus is a corpus of query cases with MongoDB's documented
// answers (find filters, sort, projection, skip/limit, update operators,
// the aggregation stages qmlsab's workloads use, and error cases), runnable
// against any server that speaks the MongoDB wire protocol. It keeps
// mongosim honest against MongoDB's rules and lets an independent server
// be compared with the same cases.
//
// The expected answers are written from MongoDB's documentation, not from
// any server's output.
package querycorpus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// Coll is the placeholder a case's command uses for the collection name;
// OutColl is the collection a $merge case writes into.
const (
	Coll    = "$coll"
	OutColl = "$out_coll"
)

// Case is one command with MongoDB's documented answer.
type Case struct {
	ID   string // stable, unique, e.g. "find/dotted-array-subdoc-gt"
	Rule string // one line: the documented MongoDB rule the case checks

	// Seed is the collection's documents before the command; nil means
	// DefaultSeed.
	Seed []bson.D
	// Command is run against the database; a top-level string value (or
	// $merge's into) equal to Coll or OutColl is replaced by the collection
	// the corpus uses.
	Command bson.D
	// Write marks a command that changes data: the answer is then what a
	// find with Readback (default: every document) returns afterwards,
	// sorted by _id, from the collection (or, with ReadOut, the $merge
	// target).
	Write    bool
	Readback bson.D
	ReadOut  bool

	// Want is the expected documents; Ordered when their order is part of
	// the rule, otherwise compared as a set. IDs compares only each
	// document's _id. Canonical compares canonical Extended JSON (numeric
	// types matter), otherwise relaxed.
	Want      []bson.D
	Ordered   bool
	IDs       bool
	Canonical bool
	// WantCode, when not zero, is the expected error code, and
	// WantCodeName its codeName (compared when the server reports one).
	WantCode     int32
	WantCodeName string
}

// Result is one case's outcome.
type Result struct {
	ID   string
	Pass bool
	// Got and Want are canonical Extended JSON (relaxed unless the case
	// says canonical) of what came back and was expected, or
	// "error 40 ConflictingUpdateOperators".
	Got, Want string
}

const (
	collName = "querycorpus"
	outName  = "querycorpus_out"
)

// Check runs every case against db, a database it may drop and refill. It
// reseeds the collection before a case whose seed differs from the last or
// after a case that wrote. It returns one Result per case and errors only
// when it cannot talk to the server at all.
func Check(ctx context.Context, db *mongo.Database) ([]Result, error) {
	if err := db.RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err(); err != nil {
		return nil, fmt.Errorf("querycorpus: cannot talk to the server: %w", err)
	}
	var results []Result
	dirty := true
	var lastSeed []bson.D
	for _, c := range Cases() {
		seed := c.Seed
		if seed == nil {
			seed = DefaultSeed()
		}
		want := c.wantString()
		if dirty || !sameSeed(seed, lastSeed) {
			if err := reseed(ctx, db, seed); err != nil {
				if ctx.Err() != nil {
					return results, fmt.Errorf("querycorpus: %w", ctx.Err())
				}
				results = append(results, Result{ID: c.ID, Got: "seeding failed: " + err.Error(), Want: want})
				dirty = true
				continue
			}
			dirty, lastSeed = false, seed
		}
		got, pass := c.run(ctx, db)
		if c.Write {
			dirty = true
		}
		results = append(results, Result{ID: c.ID, Pass: pass, Got: got, Want: want})
	}
	return results, nil
}

func sameSeed(a, b []bson.D) bool {
	if a == nil || b == nil {
		return false
	}
	ja, _ := bson.MarshalExtJSON(bson.D{{Key: "s", Value: a}}, true, false)
	jb, _ := bson.MarshalExtJSON(bson.D{{Key: "s", Value: b}}, true, false)
	return string(ja) == string(jb)
}

func reseed(ctx context.Context, db *mongo.Database, seed []bson.D) error {
	for _, name := range []string{collName, outName} {
		if err := db.Collection(name).Drop(ctx); err != nil {
			return fmt.Errorf("dropping %s: %w", name, err)
		}
	}
	if len(seed) == 0 {
		return nil
	}
	docs := make([]any, len(seed))
	for i, d := range seed {
		docs[i] = d
	}
	if _, err := db.Collection(collName).InsertMany(ctx, docs); err != nil {
		return fmt.Errorf("inserting the seed: %w", err)
	}
	return nil
}

// command is the case's command with the placeholders replaced.
func (c Case) command() bson.D {
	out := make(bson.D, len(c.Command))
	for i, e := range c.Command {
		out[i] = bson.E{Key: e.Key, Value: replaceNames(e.Value)}
	}
	return out
}

func replaceNames(v any) any {
	switch t := v.(type) {
	case string:
		switch t {
		case Coll:
			return collName
		case OutColl:
			return outName
		}
	case bson.A:
		out := make(bson.A, len(t))
		for i, e := range t {
			out[i] = replaceNames(e)
		}
		return out
	case bson.D:
		out := make(bson.D, len(t))
		for i, e := range t {
			out[i] = bson.E{Key: e.Key, Value: replaceNames(e.Value)}
		}
		return out
	}
	return v
}

// run executes the case and renders what came back.
func (c Case) run(ctx context.Context, db *mongo.Database) (string, bool) {
	reply, err := db.RunCommand(ctx, c.command()).Raw()
	if err != nil {
		return c.errorOutcome(err)
	}
	if we, ok := reply.Lookup("writeErrors").ArrayOK(); ok {
		if first, err := we.IndexErr(0); err == nil {
			code, _ := first.Document().Lookup("code").AsInt64OK()
			name, _ := first.Document().Lookup("codeName").StringValueOK()
			return c.codeOutcome(int32(code), name)
		}
	}
	if c.WantCode != 0 && !c.Write {
		return "no error", false
	}
	var docs []bson.Raw
	if c.Write {
		if c.WantCode != 0 {
			return "no error", false
		}
		name := collName
		if c.ReadOut {
			name = outName
		}
		filter := c.Readback
		if filter == nil {
			filter = bson.D{}
		}
		if docs, err = fetch(ctx, db, bson.D{{Key: "find", Value: name}, {Key: "filter", Value: filter}, {Key: "sort", Value: bson.D{{Key: "_id", Value: 1}}}}); err != nil {
			return "readback failed: " + err.Error(), false
		}
	} else if docs, err = cursorDocs(ctx, db, reply); err != nil {
		return "reading the cursor failed: " + err.Error(), false
	}
	got := c.render(docs)
	return got, got == c.wantString()
}

func (c Case) errorOutcome(err error) (string, bool) {
	if code, name, ok := serverErrorCode(err); ok {
		return c.codeOutcome(code, name)
	}
	return "error: " + err.Error(), false
}

// serverErrorCode is the code (and codeName, when the server sent one) of
// an error the server reported, however the driver wrapped it: a command
// error, or the first write error (else the write concern error) of a
// write or bulk write exception. ok is false for errors that carry no
// server code (network, context, decoding).
func serverErrorCode(err error) (code int32, name string, ok bool) {
	var ce mongo.CommandError
	if errors.As(err, &ce) {
		return ce.Code, ce.Name, true
	}
	var we mongo.WriteException
	if errors.As(err, &we) {
		if len(we.WriteErrors) > 0 {
			return writeErrorCode(we.WriteErrors[0])
		}
		if we.WriteConcernError != nil {
			return int32(we.WriteConcernError.Code), we.WriteConcernError.Name, true
		}
	}
	var bwe mongo.BulkWriteException
	if errors.As(err, &bwe) {
		if len(bwe.WriteErrors) > 0 {
			return writeErrorCode(bwe.WriteErrors[0].WriteError)
		}
		if bwe.WriteConcernError != nil {
			return int32(bwe.WriteConcernError.Code), bwe.WriteConcernError.Name, true
		}
	}
	return 0, "", false
}

// writeErrorCode reads a write error's code, and its codeName from the
// server's original document when it holds one (mongod's write errors
// usually do not).
func writeErrorCode(we mongo.WriteError) (int32, string, bool) {
	name := ""
	if we.Raw != nil {
		name, _ = we.Raw.Lookup("codeName").StringValueOK()
	}
	return int32(we.Code), name, true
}

// codeOutcome compares an error's code, and its codeName when the server
// gave one (write errors carry none).
func (c Case) codeOutcome(code int32, name string) (string, bool) {
	got := strings.TrimSpace(fmt.Sprintf("error %d %s", code, name))
	if c.WantCode == 0 {
		return got, false
	}
	return got, code == c.WantCode && (name == "" || name == c.WantCodeName)
}

func fetch(ctx context.Context, db *mongo.Database, cmd bson.D) ([]bson.Raw, error) {
	reply, err := db.RunCommand(ctx, cmd).Raw()
	if err != nil {
		return nil, err
	}
	return cursorDocs(ctx, db, reply)
}

// cursorDocs reads a command's cursor to its end.
func cursorDocs(ctx context.Context, db *mongo.Database, reply bson.Raw) ([]bson.Raw, error) {
	var docs []bson.Raw
	batch := "firstBatch"
	for {
		cur, ok := reply.Lookup("cursor").DocumentOK()
		if !ok {
			return nil, fmt.Errorf("reply has no cursor: %s", reply)
		}
		arr, _ := bson.Raw(cur).Lookup(batch).ArrayOK()
		vals, _ := arr.Values()
		for _, v := range vals {
			d, ok := v.DocumentOK()
			if !ok {
				return nil, fmt.Errorf("cursor holds a %s, not a document", v.Type)
			}
			docs = append(docs, bson.Raw(d))
		}
		id, _ := bson.Raw(cur).Lookup("id").AsInt64OK()
		if id == 0 {
			return docs, nil
		}
		ns, _ := bson.Raw(cur).Lookup("ns").StringValueOK()
		_, coll, _ := strings.Cut(ns, ".")
		var err error
		if reply, err = db.RunCommand(ctx, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: coll}}).Raw(); err != nil {
			return nil, fmt.Errorf("getMore: %w", err)
		}
		batch = "nextBatch"
	}
}

func (c Case) wantString() string {
	if c.WantCode != 0 {
		return strings.TrimSpace(fmt.Sprintf("error %d %s", c.WantCode, c.WantCodeName))
	}
	raws := make([]bson.Raw, len(c.Want))
	for i, d := range c.Want {
		b, err := bson.Marshal(d)
		if err != nil {
			return "unmarshalable expected document: " + err.Error()
		}
		raws[i] = b
	}
	return c.render(raws)
}

// render is Extended JSON of docs (or of their _ids), in order or sorted
// when the case compares sets.
func (c Case) render(docs []bson.Raw) string {
	parts := make([]string, 0, len(docs))
	for _, d := range docs {
		var v any = d
		if c.IDs {
			v = bson.D{{Key: "_id", Value: d.Lookup("_id")}}
		}
		j, err := bson.MarshalExtJSON(v, c.Canonical, false)
		if err != nil {
			j = []byte(fmt.Sprintf("unrenderable: %v", err))
		}
		s := string(j)
		if c.IDs {
			s = strings.TrimSuffix(strings.TrimPrefix(s, `{"_id":`), "}")
		}
		parts = append(parts, s)
	}
	if !c.Ordered {
		slices.Sort(parts)
	}
	return "[" + strings.Join(parts, ",") + "]"
}
