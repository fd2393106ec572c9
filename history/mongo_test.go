package history

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/qmlsab/qmlsab/mongosim"
)

// withDatabase puts a database name into a URI that has none.
func withDatabase(uri, db string) string {
	return strings.Replace(uri, "/?", "/"+db+"?", 1)
}

// databases numbers the test databases (the replica set outlives a test
// when -count repeats it).
var databases atomic.Int32

func mongoBackend(t *testing.T, uri string) backend {
	client, err := mongo.Connect(options.Client().ApplyURI(uri).SetServerMonitoringMode(options.ServerMonitoringModePoll))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Disconnect(context.Background()) })
	dbOf := func(loc string) *mongo.Database {
		name := strings.TrimPrefix(loc[strings.LastIndex(loc, "/"):strings.Index(loc, "?")], "/")
		return client.Database(name)
	}
	return backend{
		location: func(t *testing.T) string { return withDatabase(uri, fmt.Sprintf("h%d", databases.Add(1))) },
		setVersion: func(t *testing.T, loc string, v int) {
			_, err := dbOf(loc).Collection("meta").UpdateOne(context.Background(), bson.D{{Key: "_id", Value: mongoSchemaID}},
				bson.D{{Key: "$set", Value: bson.D{{Key: "version", Value: v}}}})
			if err != nil {
				t.Fatal(err)
			}
		},
		version: mongoSchemaVersion,
		snapshot: func(t *testing.T, loc string) string {
			var out strings.Builder
			for _, coll := range []string{"meta", "runs"} {
				cur, err := dbOf(loc).Collection(coll).Find(context.Background(), bson.D{},
					options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
				if err != nil {
					t.Fatal(err)
				}
				var docs []bson.Raw
				if err := cur.All(context.Background(), &docs); err != nil {
					t.Fatal(err)
				}
				for _, d := range docs {
					out.WriteString(coll + ":" + d.String() + "\n")
				}
			}
			return out.String()
		},
	}
}

var (
	replicaSetOnce sync.Once
	replicaSet     *mongosim.ReplicaSet
	replicaSetErr  error
)

// startReplicaSet starts the package's simulated replica set on first use;
// TestMain closes it.
func startReplicaSet(t *testing.T) *mongosim.ReplicaSet {
	t.Helper()
	replicaSetOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// The default election timeout (10 s) keeps a slow machine (-race)
		// from failing over in the middle of a test.
		replicaSet, replicaSetErr = mongosim.StartReplicaSet(ctx, mongosim.ReplicaSetOptions{})
	})
	if replicaSetErr != nil {
		t.Fatalf("StartReplicaSet: %v", replicaSetErr)
	}
	return replicaSet
}

func closeReplicaSet() {
	if replicaSet != nil {
		replicaSet.Close()
	}
}

func TestMongo(t *testing.T) {
	rs := startReplicaSet(t)
	runSuite(t, mongoBackend(t, rs.URI()))

	t.Run("DefaultDatabaseAndDocumentShape", func(t *testing.T) {
		ctx := context.Background()
		s := mustOpen(t, rs.URI())
		mustAdd(t, s, sampleRun("shape", 0, "master", "find"))
		client, err := mongo.Connect(options.Client().ApplyURI(rs.URI()).SetServerMonitoringMode(options.ServerMonitoringModePoll))
		if err != nil {
			t.Fatal(err)
		}
		defer client.Disconnect(ctx)
		db := client.Database(MongoDefaultDatabase)
		var meta struct {
			Version int `bson:"version"`
		}
		if err := db.Collection("meta").FindOne(ctx, bson.D{{Key: "_id", Value: mongoSchemaID}}).Decode(&meta); err != nil || meta.Version != mongoSchemaVersion {
			t.Fatalf("meta = %+v, %v", meta, err)
		}
		// Label filters match whole {k, v} elements: the stored shape.
		n, err := db.Collection("runs").CountDocuments(ctx, bson.D{{Key: "labels", Value: bson.D{{Key: "k", Value: "ci.job"}, {Key: "v", Value: "nightly"}}}})
		if err != nil || n != 1 {
			t.Fatalf("count by label = %d, %v", n, err)
		}
	})
}

func TestMongoErrorsHideThePassword(t *testing.T) {
	rs := startReplicaSet(t)
	hosts := strings.Join(rs.Hosts(), ",")
	const user, pass = "alice", "s3cr%40t%3Apw" // escaped "@" and ":" in the password
	secrets := []string{"s3cr%40t%3Apw", "s3cr@t:pw", "s3cr"}
	cases := map[string]string{
		// The simulator has no authentication: the driver's handshake fails.
		"auth refused":        "mongodb://" + user + ":" + pass + "@" + hosts + "/hist?replicaSet=rs0&serverSelectionTimeoutMS=2000",
		"bad option":          "mongodb://" + user + ":" + pass + "@" + hosts + "/hist?replicaSet=rs0&connectTimeoutMS=soon",
		"no server":           "mongodb://" + user + ":" + pass + "@127.0.0.1:1/hist?serverSelectionTimeoutMS=300&connectTimeoutMS=300",
		"bad password escape": "mongodb://" + user + ":s3cr%zz@" + hosts + "/hist",
		"secret option": "mongodb://" + hosts + "/hist?replicaSet=rs0&authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:s3cr3tok" +
			"&serverSelectionTimeoutMS=2000",
	}
	for name, uri := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := Open(ctx, uri)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			msg := err.Error()
			t.Logf("error: %s", msg)
			for _, secret := range append(secrets, "s3cr3tok") {
				if strings.Contains(msg, secret) {
					t.Fatalf("error %q contains the secret %q", msg, secret)
				}
			}
			if !strings.Contains(msg, "<redacted>") {
				t.Fatalf("error %q does not show the redacted location", msg)
			}
		})
	}
	// errors.Is still sees through a redacted error.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := Open(ctx, "mongodb://"+user+":"+pass+"@127.0.0.1:1/hist")
	if err == nil || (!errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "server selection")) {
		t.Fatalf("Open with an expiring context: %v", err)
	}
}
