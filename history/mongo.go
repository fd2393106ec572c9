package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"

	"github.com/qmlsab/qmlsab/internal/mongoclient"
	"github.com/qmlsab/qmlsab/internal/mongouri"
)

// MongoDefaultDatabase is the database used when the URI names none.
const MongoDefaultDatabase = "qmlsab"

// mongoSchemaID is the _id of the meta document holding the schema version.
const mongoSchemaID = "schema"

// mongoMigrations are the schema steps: step i takes the meta version from
// i to i+1. Steps must be idempotent: two openers may run one at once.
// Append, never edit, once a step has shipped.
var mongoMigrations = []func(ctx context.Context, s *mongoStore) error{
	// 1: secondary indexes for ordering by start time and for the workload
	// filter. Uniqueness of run ids needs no index: the run id is _id.
	func(ctx context.Context, s *mongoStore) error {
		_, err := s.runs.Indexes().CreateMany(ctx, []mongo.IndexModel{
			{Keys: bson.D{{Key: "startedNs", Value: 1}, {Key: "_id", Value: 1}}},
			{Keys: bson.D{{Key: "workload", Value: 1}, {Key: "startedNs", Value: 1}}},
		})
		// A server without createIndexes (the in-process simulator) works
		// without them: they only speed up sorting and filtering.
		var se mongo.ServerError
		if errors.As(err, &se) && se.HasErrorCode(mongoCommandNotFound) {
			return nil
		}
		return err
	},
}

const (
	mongoCommandNotFound = 59
)

// mongoSchemaVersion is the schema version this code writes to MongoDB.
var mongoSchemaVersion = len(mongoMigrations)

type mongoStore struct {
	readOnly bool   // OpenReadOnly: never migrates or writes
	uri      string // with credentials: only ever passed through redaction
	where    string // redacted URI and database, for messages
	client   *mongo.Client
	runs     *mongo.Collection
	meta     *mongo.Collection
}

func openMongo(ctx context.Context, uri string) (Store, error) {
	return openMongoMode(ctx, uri, false)
}

// openMongoReadOnly connects without migrating: it checks the schema
// version and writes nothing (a database without one reads as empty).
func openMongoReadOnly(ctx context.Context, uri string) (Store, error) {
	return openMongoMode(ctx, uri, true)
}

func openMongoMode(ctx context.Context, uri string, readOnly bool) (Store, error) {
	where := RedactURI(uri)
	cs, err := mongouri.Parse(uri)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	dbName := cs.Database
	if dbName == "" {
		dbName = MongoDefaultDatabase
	}
	opts := options.Client().ApplyURI(uri)
	// An address that answers nothing is reported within seconds, in
	// one line (mongoclient.Unreachable), unless the URI sets its own
	// serverSelectionTimeoutMS.
	if !cs.ServerSelectionTimeoutSet {
		opts.SetServerSelectionTimeout(mongoclient.ServerSelectionTimeout)
	}
	if cs.ServerMonitoringMode == "" {
		// A history store makes a few short requests. Streaming monitoring
		// (the default) holds an awaitable hello open on each server, and
		// Disconnect can then wait for it for the whole heartbeat interval
		// (10 s) when it races a check that is just starting; polling
		// answers at once.
		opts.SetServerMonitoringMode(options.ServerMonitoringModePoll)
	}
	client, err := mongo.Connect(opts)
	if err != nil {
		return nil, fmt.Errorf("history: %s: %w", where, redactErr(err, uri))
	}
	db := client.Database(dbName)
	s := &mongoStore{readOnly: readOnly, uri: uri, where: where + " (database " + dbName + ")", client: client,
		runs: db.Collection("runs"), meta: db.Collection("meta")}
	if err := client.Ping(ctx, readpref.Primary()); err != nil {
		s.abandon()
		return nil, s.err("connecting", mongoclient.Unreachable(err))
	}
	if err := s.migrate(ctx); err != nil {
		s.abandon()
		return nil, err
	}
	return s, nil
}

// err names the store in an error and removes the URI's secrets from it.
func (s *mongoStore) err(what string, err error) error {
	return fmt.Errorf("history: %s: %s: %w", s.where, what, redactErr(err, s.uri))
}

func (s *mongoStore) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.client.Disconnect(ctx); err != nil {
		return s.err("disconnecting", err)
	}
	return nil
}

// abandon disconnects in the background, so that a failed Open returns
// without waiting for the driver's monitors to stop.
func (s *mongoStore) abandon() {
	go s.Close()
}

// migrate brings the schema to mongoSchemaVersion. The version advances by
// compare-and-set on the meta document, so concurrent openers agree.
func (s *mongoStore) migrate(ctx context.Context) error {
	for {
		var m struct {
			Version int `bson:"version"`
		}
		err := s.meta.FindOne(ctx, bson.D{{Key: "_id", Value: mongoSchemaID}}).Decode(&m)
		if errors.Is(err, mongo.ErrNoDocuments) && s.readOnly {
			return nil // no history written yet: reads find nothing
		}
		if errors.Is(err, mongo.ErrNoDocuments) {
			_, err = s.meta.InsertOne(ctx, bson.D{{Key: "_id", Value: mongoSchemaID}, {Key: "version", Value: 0}})
			if err != nil && !mongo.IsDuplicateKeyError(err) {
				return s.err("creating the schema version", err)
			}
			continue
		}
		if err != nil {
			return s.err("reading the schema version", err)
		}
		switch {
		case m.Version > mongoSchemaVersion:
			return fmt.Errorf("history: %s: %w: schema version %d, this qmlsab knows up to %d; upgrade qmlsab (nothing was changed)",
				s.where, ErrNewerSchema, m.Version, mongoSchemaVersion)
		case m.Version == mongoSchemaVersion:
			return nil
		case m.Version < 0:
			return fmt.Errorf("history: %s: %w: schema version %d", s.where, ErrNotHistory, m.Version)
		case s.readOnly:
			return nil // older documents read as they are
		}
		if err := mongoMigrations[m.Version](ctx, s); err != nil {
			return s.err(fmt.Sprintf("migrating the schema to version %d", m.Version+1), err)
		}
		_, err = s.meta.UpdateOne(ctx, bson.D{{Key: "_id", Value: mongoSchemaID}, {Key: "version", Value: m.Version}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "version", Value: m.Version + 1}}}})
		if err != nil {
			return s.err("recording the schema version", err)
		}
	}
}

// The document of a run in the runs collection. Maps are stored as arrays
// of pairs, so that metric and label names may hold '.' or '$'.
type mongoRun struct {
	ID             string    `bson:"_id"`
	StartedNs      int64     `bson:"startedNs"`
	Started        time.Time `bson:"started"`
	Workload       string    `bson:"workload"`
	WorkloadDigest string    `bson:"workloadDigest"`
	// WorkloadDefinition is Run.WorkloadDefinition's JSON text; absent
	// in documents written before it was kept.
	WorkloadDefinition string        `bson:"workloadDefinition,omitempty"`
	Baseline           string        `bson:"baseline"`
	Labels             []mongoKV     `bson:"labels"`
	Arms               []mongoArm    `bson:"arms"`
	Host               mongoHost     `bson:"host"`
	Simulated          bool          `bson:"simulated"`
	Partial            bool          `bson:"partial,omitempty"`
	TrialCount         int           `bson:"trialCount"`
	Trials             []mongoTrial  `bson:"trials"`
	Effects            []mongoEffect `bson:"effects"`
	Digest             string        `bson:"digest"`
	Added              time.Time     `bson:"added"`
}

type mongoKV struct {
	K string `bson:"k"`
	V string `bson:"v"`
}

type mongoArm struct {
	Name       string    `bson:"name"`
	Build      string    `bson:"build"`
	Parameters []mongoKV `bson:"parameters"`
	// Definition is Arm.Definition's JSON text (absent before it was
	// kept).
	Definition string `bson:"definition,omitempty"`
}

type mongoHost struct {
	Name        string `bson:"name"`
	CPUModel    string `bson:"cpuModel"`
	Cores       int    `bson:"cores"`
	MemoryBytes int64  `bson:"memoryBytes"`
	Kernel      string `bson:"kernel"`
	TargetKind  string `bson:"targetKind"`
}

type mongoTrial struct {
	Arm     string        `bson:"arm"`
	Index   int           `bson:"index"`
	Host    string        `bson:"host"`
	Metrics []mongoMetric `bson:"metrics"`
}

type mongoMetric struct {
	Name  string  `bson:"name"`
	Value float64 `bson:"value"`
}

type mongoEffect struct {
	Arm    string  `bson:"arm"`
	Metric string  `bson:"metric"`
	Shift  float64 `bson:"shift"`
	P      float64 `bson:"p"`
}

func toKVs(m map[string]string) []mongoKV {
	var out []mongoKV
	for _, k := range sortedKeys(m) {
		out = append(out, mongoKV{k, m[k]})
	}
	return out
}

func fromKVs(kvs []mongoKV) map[string]string {
	if len(kvs) == 0 {
		return nil
	}
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.K] = kv.V
	}
	return m
}

func toMongo(r Run, digest string) mongoRun {
	h := r.Host
	d := mongoRun{ID: r.ID, StartedNs: nanos(r.Started), Started: r.Started, Workload: r.Workload,
		WorkloadDigest: r.WorkloadDigest, WorkloadDefinition: string(r.WorkloadDefinition), Baseline: r.Baseline, Labels: toKVs(r.Labels),
		Host:      mongoHost{h.Name, h.CPUModel, h.Cores, h.MemoryBytes, h.Kernel, h.TargetKind},
		Simulated: r.Simulated, Partial: r.Partial, TrialCount: len(r.Trials), Digest: digest, Added: time.Now().UTC()}
	for _, a := range r.Arms {
		d.Arms = append(d.Arms, mongoArm{a.Name, a.Build, toKVs(a.Parameters), string(a.Definition)})
	}
	for _, t := range r.Trials {
		mt := mongoTrial{Arm: t.Arm, Index: t.Index, Host: t.Host}
		for _, m := range sortedKeys(t.Metrics) {
			mt.Metrics = append(mt.Metrics, mongoMetric{m, t.Metrics[m]})
		}
		d.Trials = append(d.Trials, mt)
	}
	for _, e := range r.Effects {
		d.Effects = append(d.Effects, mongoEffect(e))
	}
	return d
}

func (d mongoRun) run() Run {
	h := d.Host
	r := Run{ID: d.ID, Started: fromNanos(d.StartedNs), Workload: d.Workload, WorkloadDigest: d.WorkloadDigest,
		Baseline: d.Baseline, Labels: fromKVs(d.Labels),
		Host:      Host{Name: h.Name, CPUModel: h.CPUModel, Cores: h.Cores, MemoryBytes: h.MemoryBytes, Kernel: h.Kernel, TargetKind: h.TargetKind},
		Simulated: d.Simulated, Partial: d.Partial}
	if d.WorkloadDefinition != "" {
		r.WorkloadDefinition = json.RawMessage(d.WorkloadDefinition)
	}
	for _, a := range d.Arms {
		arm := Arm{Name: a.Name, Build: a.Build, Parameters: fromKVs(a.Parameters)}
		if a.Definition != "" {
			arm.Definition = json.RawMessage(a.Definition)
		}
		r.Arms = append(r.Arms, arm)
	}
	for _, t := range d.Trials {
		tr := Trial{Arm: t.Arm, Index: t.Index, Host: t.Host}
		for _, m := range t.Metrics {
			if tr.Metrics == nil {
				tr.Metrics = make(map[string]float64, len(t.Metrics))
			}
			tr.Metrics[m.Name] = m.Value
		}
		r.Trials = append(r.Trials, tr)
	}
	for _, e := range d.Effects {
		r.Effects = append(r.Effects, Effect(e))
	}
	return r
}

func (s *mongoStore) Add(ctx context.Context, r Run) (bool, error) {
	if s.readOnly {
		return false, fmt.Errorf("history: %s: adding run %s: %w", s.where, r.ID, ErrReadOnly)
	}
	r, digest, err := prepare(r)
	if err != nil {
		return false, err
	}
	_, err = s.runs.InsertOne(ctx, toMongo(r, digest))
	if err == nil {
		return true, nil
	}
	if !mongo.IsDuplicateKeyError(err) {
		return false, s.err("adding run "+r.ID, err)
	}
	var stored mongoRun
	if err := s.runs.FindOne(ctx, bson.D{{Key: "_id", Value: r.ID}}).Decode(&stored); err != nil {
		return false, s.err("reading run "+r.ID, err)
	}
	if sameContent(stored.Digest, r, digest) {
		return false, nil
	}
	return false, conflict(stored.run(), r, stored.Digest, digest)
}

// mongoFilter turns a filter into a query on the runs collection.
func mongoFilter(f Filter) bson.D {
	q := bson.D{}
	if f.Workload != "" {
		q = append(q, bson.E{Key: "workload", Value: f.Workload})
	}
	var rng bson.D
	if !f.Since.IsZero() {
		rng = append(rng, bson.E{Key: "$gte", Value: nanos(f.Since)})
	}
	if !f.Until.IsZero() {
		rng = append(rng, bson.E{Key: "$lt", Value: nanos(f.Until)})
	}
	if rng != nil {
		q = append(q, bson.E{Key: "startedNs", Value: rng})
	}
	if len(f.Labels) > 0 {
		var and bson.A
		for _, k := range sortedKeys(f.Labels) {
			// Whole-element match against the labels array: {k, v} in order.
			and = append(and, bson.D{{Key: "labels", Value: bson.D{{Key: "k", Value: k}, {Key: "v", Value: f.Labels[k]}}}})
		}
		q = append(q, bson.E{Key: "$and", Value: and})
	}
	return q
}

// find reads the runs matching f, ordered by start time, with projection
// (nil for whole documents).
func (s *mongoStore) find(ctx context.Context, q bson.D, last int, projection bson.D) ([]mongoRun, error) {
	dir := 1
	if last > 0 {
		dir = -1
	}
	opts := options.Find().SetSort(bson.D{{Key: "startedNs", Value: dir}, {Key: "_id", Value: dir}})
	if last > 0 {
		opts.SetLimit(int64(last))
	}
	if projection != nil {
		opts.SetProjection(projection)
	}
	cur, err := s.runs.Find(ctx, q, opts)
	if err != nil {
		return nil, s.err("reading runs", err)
	}
	var docs []mongoRun
	if err := cur.All(ctx, &docs); err != nil {
		return nil, s.err("reading runs", err)
	}
	if last > 0 {
		slices.Reverse(docs)
	}
	return docs, nil
}

func (s *mongoStore) Get(ctx context.Context, id string) (Run, error) {
	docs, err := s.find(ctx, bson.D{{Key: "_id", Value: id}}, 0, nil)
	if err != nil {
		return Run{}, err
	}
	if len(docs) == 0 {
		return Run{}, fmt.Errorf("history: %s: run %q: %w", s.where, id, ErrNotFound)
	}
	return docs[0].run(), nil
}

func (s *mongoStore) Runs(ctx context.Context, f Filter) ([]Run, error) {
	docs, err := s.find(ctx, mongoFilter(f), f.Last, nil)
	if err != nil {
		return nil, err
	}
	var out []Run
	for _, d := range docs {
		out = append(out, d.run())
	}
	return out, nil
}

func (s *mongoStore) List(ctx context.Context, f Filter) ([]RunSummary, error) {
	docs, err := s.find(ctx, mongoFilter(f), f.Last, bson.D{{Key: "trials", Value: 0}, {Key: "effects", Value: 0}})
	if err != nil {
		return nil, err
	}
	var out []RunSummary
	for _, d := range docs {
		sum := summarize(d.run())
		sum.Trials = d.TrialCount
		out = append(out, sum)
	}
	return out, nil
}

func (s *mongoStore) Series(ctx context.Context, metric, arm string, f Filter) ([]SeriesPoint, error) {
	return mongoPoints(ctx, s, f, bson.D{{Key: "startedNs", Value: 1}, {Key: "arms", Value: 1}, {Key: "trials", Value: 1}},
		func(r Run) (SeriesPoint, bool) { return seriesOf(r, metric, arm) })
}

func (s *mongoStore) Effects(ctx context.Context, metric, arm string, f Filter) ([]EffectPoint, error) {
	return mongoPoints(ctx, s, f, bson.D{{Key: "startedNs", Value: 1}, {Key: "arms", Value: 1},
		{Key: "baseline", Value: 1}, {Key: "effects", Value: 1}},
		func(r Run) (EffectPoint, bool) { return effectOf(r, metric, arm) })
}

// mongoPoints reads the runs f selects, with only the fields projection
// names, and keeps the point each gives (of), in run order; a run that
// gives none is passed over.
func mongoPoints[P any](ctx context.Context, s *mongoStore, f Filter, projection bson.D, of func(Run) (P, bool)) ([]P, error) {
	docs, err := s.find(ctx, mongoFilter(f), f.Last, projection)
	if err != nil {
		return nil, err
	}
	var out []P
	for _, d := range docs {
		if p, ok := of(d.run()); ok {
			out = append(out, p)
		}
	}
	return out, nil
}
