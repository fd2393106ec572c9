package main_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// startProcess runs the mongosim binary (under name, via a symlink, when
// set) with args, and waits until it listens on port.
func startProcess(t *testing.T, dir, name string, port int, args ...string) {
	t.Helper()
	bin := binary
	if name != "" {
		bin = filepath.Join(dir, name)
		if err := os.Symlink(binary, bin); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
	}
	log, err := os.Create(filepath.Join(dir, fmt.Sprintf("%d.log", port)))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append(args, "--port", fmt.Sprint(port), "--bind_ip", "127.0.0.1")...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); log.Close() }()
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGKILL) })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s %v did not start listening", bin, args)
}

// TestShardedClusterOfProcesses: cmd/mongosim stands in for the binaries of
// a sharded cluster — --configsvr and --shardsvr members and a router
// started under a "mongos" name — and the Go driver drives it as one.
func TestShardedClusterOfProcesses(t *testing.T) {
	dir := t.TempDir()
	ports := freePorts(t, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sets := []struct {
		name, role string
		port       int
	}{{"cfg", "--configsvr", ports[0]}, {"sh0", "--shardsvr", ports[1]}, {"sh1", "--shardsvr", ports[2]}}
	for _, s := range sets {
		startProcess(t, dir, "", s.port, s.role, "--replSet", s.name)
		addr := fmt.Sprintf("127.0.0.1:%d", s.port)
		cfg := bson.D{{Key: "_id", Value: s.name}, {Key: "members", Value: bson.A{bson.D{{Key: "_id", Value: 0}, {Key: "host", Value: addr}}}}}
		if _, err := call(ctx, addr, bson.D{{Key: "replSetInitiate", Value: cfg}, {Key: "$db", Value: "admin"}}); err != nil {
			t.Fatalf("replSetInitiate %s: %v", s.name, err)
		}
		for stateOf(addr) != "primary" {
			if ctx.Err() != nil {
				t.Fatalf("%s elected no primary", s.name)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	hello, err := call(ctx, fmt.Sprintf("127.0.0.1:%d", ports[0]), bson.D{{Key: "hello", Value: 1}, {Key: "$db", Value: "admin"}})
	if err != nil || hello.Lookup("configsvr").Type == 0 {
		t.Fatalf("config server hello lacks configsvr: %v %v", hello, err)
	}
	startProcess(t, dir, "mongos", ports[3], "--configdb", fmt.Sprintf("cfg/127.0.0.1:%d", ports[0]))
	client, err := mongo.Connect(options.Client().ApplyURI(fmt.Sprintf("mongodb://127.0.0.1:%d/", ports[3])).SetServerSelectionTimeout(15 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(context.Background())
	admin := client.Database("admin")
	for _, s := range sets[1:] {
		if err := admin.RunCommand(ctx, bson.D{{Key: "addShard", Value: fmt.Sprintf("%s/127.0.0.1:%d", s.name, s.port)}}).Err(); err != nil {
			t.Fatalf("addShard %s: %v", s.name, err)
		}
	}
	// The config server is not a shard.
	if err := admin.RunCommand(ctx, bson.D{{Key: "addShard", Value: fmt.Sprintf("cfg/127.0.0.1:%d", ports[0])}}).Err(); err == nil {
		t.Fatal("addShard of a --configsvr set succeeded, want InvalidOptions")
	}
	if err := admin.RunCommand(ctx, bson.D{{Key: "shardCollection", Value: "app.c"}, {Key: "key", Value: bson.D{{Key: "k", Value: "hashed"}}}}).Err(); err != nil {
		t.Fatal(err)
	}
	var docs []any
	for i := range 100 {
		docs = append(docs, bson.D{{Key: "k", Value: i}})
	}
	if _, err := client.Database("app").Collection("c").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	for _, s := range sets[1:] {
		direct, err := mongo.Connect(options.Client().ApplyURI(fmt.Sprintf("mongodb://127.0.0.1:%d/?directConnection=true", s.port)))
		if err != nil {
			t.Fatal(err)
		}
		n, err := direct.Database("app").Collection("c").CountDocuments(ctx, bson.D{})
		direct.Disconnect(context.Background())
		if err != nil || n == 0 || n == 100 {
			t.Fatalf("shard %s holds %d of 100 documents (%v), want a share", s.name, n, err)
		}
	}
	n, err := client.Database("app").Collection("c").CountDocuments(ctx, bson.D{})
	if err != nil || n != 100 {
		t.Fatalf("count through the router: %d %v", n, err)
	}
}
