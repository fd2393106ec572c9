package mongosim_test

import (
	"bufio"
	"context"
	"net"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/qmlsab/qmlsab/mongosim"
	"github.com/qmlsab/qmlsab/mongosim/wire"
)

// fixedReplyServer is the protocol's limit on this machine: it answers the
// handshake and hello with a fixed document and every other OP_MSG with the
// same one-document find reply, doing no work at all.
func fixedReplyServer(b *testing.B, doc bson.D) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	hello, _ := bson.Marshal(bson.D{{Key: "isWritablePrimary", Value: true}, {Key: "ismaster", Value: true},
		{Key: "maxBsonObjectSize", Value: int32(16777216)}, {Key: "maxMessageSizeBytes", Value: int32(48000000)},
		{Key: "maxWriteBatchSize", Value: int32(100000)}, {Key: "minWireVersion", Value: int32(0)},
		{Key: "maxWireVersion", Value: int32(25)}, {Key: "ok", Value: 1.0}})
	find, _ := bson.Marshal(bson.D{{Key: "cursor", Value: bson.D{{Key: "firstBatch", Value: bson.A{doc}}, {Key: "id", Value: int64(0)},
		{Key: "ns", Value: "bench.c"}}}, {Key: "ok", Value: 1.0}})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				var buf, out []byte
				for {
					var m wire.Message
					m, buf, err = wire.Read(r, buf)
					if err != nil {
						return
					}
					switch {
					case m.OpCode == wire.OpQuery:
						out = wire.AppendReply(out[:0], 1, m.RequestID, hello)
					case bson.Raw(m.Body).Lookup("find").Type == 0:
						out = wire.AppendMsg(out[:0], 1, m.RequestID, 0, hello)
					default:
						out = wire.AppendMsg(out[:0], 1, m.RequestID, 0, find)
					}
					if _, err := c.Write(out); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// BenchmarkFindByID measures find-by-_id round trips through the Go driver.
// make bench prints mongosim's ops/s as a share of the fixed-reply server's.
func BenchmarkFindByID(b *testing.B) {
	doc := bson.D{{Key: "_id", Value: 42}, {Key: "g", Value: 2}, {Key: "payload", Value: "0123456789abcdef"}}
	run := func(b *testing.B, addr string) {
		c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + addr + "/?directConnection=true"))
		if err != nil {
			b.Fatal(err)
		}
		defer c.Disconnect(context.Background())
		coll := c.Database("bench").Collection("c")
		ctx := context.Background()
		filter := bson.D{{Key: "_id", Value: 42}}
		var got bson.Raw
		if got, err = coll.FindOne(ctx, filter).Raw(); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for b.Loop() {
			if got, err = coll.FindOne(ctx, filter).Raw(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		_ = got
	}
	b.Run("fixed-reply", func(b *testing.B) { run(b, fixedReplyServer(b, doc)) })
	b.Run("mongosim", func(b *testing.B) {
		s, err := mongosim.Start(mongosim.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Kill()
		c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + s.Addr() + "/?directConnection=true"))
		if err != nil {
			b.Fatal(err)
		}
		var docs []any
		for i := range 10000 {
			docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "g", Value: i % 5}, {Key: "payload", Value: "0123456789abcdef"}})
		}
		if _, err := c.Database("bench").Collection("c").InsertMany(context.Background(), docs); err != nil {
			b.Fatal(err)
		}
		c.Disconnect(context.Background())
		run(b, s.Addr())
	})
}
