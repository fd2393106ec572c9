package target

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/mongosim"
)

// embedded is an in-process mongosim replica set, one per trial.
type embedded struct {
	rs      *mongosim.ReplicaSet
	members []MemberInfo
	caps    Capabilities
}

func provisionEmbedded(ctx context.Context, arm arms.Arm, opts Options) (Deployment, error) {
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	rs, err := mongosim.StartReplicaSet(sctx, mongosim.ReplicaSetOptions{Parameters: arm.SetParameters, Logger: opts.Logger,
		Sim: opts.Sim, MemLimitMB: opts.SimMemLimitMB})
	if err != nil {
		return nil, fmt.Errorf("arm %s: starting the embedded mongosim set: %w", arm.Name, err)
	}
	info, err := startupCheck(ctx, loopbackOnly, rs.Hosts(), arm)
	if err != nil {
		rs.Close()
		return nil, err
	}
	caps, err := probe(ctx, loopbackOnly, info, arm)
	if err != nil {
		rs.Close()
		return nil, err
	}
	return &embedded{rs: rs, members: info, caps: caps}, nil
}

func (e *embedded) URI() string                { return e.rs.URI() }
func (e *embedded) Members() []string          { return e.rs.Hosts() }
func (e *embedded) Simulated() bool            { return true }
func (e *embedded) Startup() []MemberInfo      { return e.members }
func (e *embedded) Capabilities() Capabilities { return e.caps }
func (e *embedded) Describe() string {
	return "embedded mongosim replica set (SIMULATED) " + strings.Join(e.rs.Hosts(), ",")
}

// ReplicaSet exposes the in-process set (tests and fault injection).
func (e *embedded) ReplicaSet() *mongosim.ReplicaSet { return e.rs }

func (e *embedded) Close(context.Context) error {
	e.rs.Close()
	return nil
}
