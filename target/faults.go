package target

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/internal/mongoclient"
)

// Faults a trial's deployment can be put through while a run measures it
// (the reliability suite's faults; docs/reliability.md). A uri target is
// never touched: qmlsab does not launch or kill what it did not start.

// PrimaryIndex is the index in Members of the member that says it is
// primary now.
func PrimaryIndex(ctx context.Context, dep Deployment) (int, error) {
	for i, h := range dep.Members() {
		if isPrimary(ctx, h) {
			return i, nil
		}
	}
	return -1, fmt.Errorf("no member says it is primary")
}

// KillMember ends member i abruptly: a local member is SIGKILLed (its
// supervisor restarts it after the restart delay); an embedded member
// crashes and is restarted after restartAfter.
func KillMember(dep Deployment, i int, restartAfter time.Duration) error {
	switch d := dep.(type) {
	case *local:
		return d.signal(i, syscall.SIGKILL)
	case *embedded:
		d.rs.Kill(i)
		time.AfterFunc(restartAfter, func() { _ = d.rs.Restart(i) })
		return nil
	}
	return fmt.Errorf("%s: qmlsab does not kill members it did not start", dep.Describe())
}

// Hang makes member i stop answering for d while its sockets stay open
// (SIGSTOP, then SIGCONT): a local member only.
func Hang(ctx context.Context, dep Deployment, i int, d time.Duration) error {
	l, ok := dep.(*local)
	if !ok {
		return fmt.Errorf("%s: hanging a member needs a local target", dep.Describe())
	}
	if err := l.signal(i, syscall.SIGSTOP); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	return l.signal(i, syscall.SIGCONT)
}

// FailCommand sets mongod's failCommand failpoint on member i (a mongod
// started with enableTestCommands; mongosim has it): data as drivers'
// tests use it, e.g. {failCommands: [find], blockConnection: true,
// blockTimeMS: 300}.
// It returns how many times the failpoint it replaced had fired (mongod's
// "count"), so turning it "off" tells whether it did anything.
func FailCommand(ctx context.Context, dep Deployment, i int, mode any, data bson.D) (fired int64, err error) {
	if _, ok := dep.(*uriTarget); ok {
		return 0, fmt.Errorf("%s: qmlsab sets no failpoints on a deployment it did not start", dep.Describe())
	}
	c, err := directClient(loopbackOnly, dep.Members()[i], 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer mongoclient.Disconnect(c)
	var reply struct {
		Count int64 `bson:"count"`
	}
	err = c.Database("admin").RunCommand(ctx, bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: mode}, {Key: "data", Value: data}}).Decode(&reply)
	return reply.Count, err
}

func (l *local) signal(i int, sig syscall.Signal) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i < 0 || i >= len(l.members) || l.members[i].cmd == nil || l.members[i].cmd.Process == nil {
		return fmt.Errorf("no member %d running", i)
	}
	return l.members[i].cmd.Process.Signal(sig)
}
