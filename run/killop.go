package run

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/qmlsab/qmlsab/arms/actor"
	"github.com/qmlsab/qmlsab/arms/killop"
	"github.com/qmlsab/qmlsab/internal/mongoclient"
	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/target"
)

// killOpAppName is the killOp actor's own appName, outside its scope.
const killOpAppName = "qmlsab-killop"

// startKillOp starts a trial's killOp actor in bg until ctx ends, and
// returns how many actors watch the deployment.
// On a replica set one actor watches the primary; on a sharded cluster one
// actor per shard watches that shard's primary (a router has no memory to
// decide with), each kill labelled with its shard. Kills go to onKill,
// which must be safe for concurrent use; rounds counts the decisions of
// every actor together.
func startKillOp(ctx context.Context, bg *sync.WaitGroup, dep target.Deployment, guard mongoclient.Guard, k killop.Config, log *slog.Logger, onKill func(store.Kill), rounds *atomic.Int64) (int, error) {
	opts := []actor.Option{actor.WithLog(log), actor.WithRounds(rounds)}
	if sh := target.ShardingOf(dep); sh != nil {
		shards := map[string]bool{}
		for _, id := range sh.ShardOf() {
			shards[id] = true
		}
		bg.Go(func() {
			if err := actor.KillOpPerShard(ctx, guard, sh.ShardOf(), k, killOpAppName, onKill, opts...); err != nil {
				log.Warn("killop actor stopped", "err", err)
			}
		})
		return len(shards), nil
	}
	c, err := mongo.Connect(guard.Client(options.Client().ApplyURI(dep.URI()).SetAppName(killOpAppName)))
	if err != nil {
		return 0, fmt.Errorf("killop actor: connecting to %s: %w", dep.Describe(), err)
	}
	bg.Go(func() {
		defer mongoclient.Disconnect(c)
		if err := actor.KillOp(ctx, c, k, onKill, opts...); err != nil {
			log.Warn("killop actor stopped", "err", err)
		}
	})
	return 1, nil
}

// actorsNote names the number of actors behind a count of decisions when
// there is more than one (one per shard).
func actorsNote(actors int) string {
	if actors > 1 {
		return fmt.Sprintf("s (%d, one per shard)", actors)
	}
	return ""
}
