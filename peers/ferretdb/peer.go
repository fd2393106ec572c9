// Package ferretdb runs FerretDB v1.24.2, an independent implementation
// of MongoDB's wire protocol, in-process as a test peer for qmlsab: the
// differential query corpus and an end-to-end uri-target run are checked
// against it. It is a nested module so that FerretDB never becomes a
// dependency of qmlsab's own commands.
//
// FerretDB is a peer to compare with, not an oracle: it is wrong in places
// and leaves many commands and stages unimplemented.
package ferretdb

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/FerretDB/FerretDB/build/version"
	"github.com/FerretDB/FerretDB/ferretdb"
)

// Version is the FerretDB release this module pins (v2 dropped the
// SQLite backend, so the peer stays on v1).
const Version = "v1.24.2"

// Server is one embedded FerretDB listening on a loopback port, its data
// in SQLite files under a directory of the caller's.
type Server struct {
	uri     string
	cancel  context.CancelFunc
	done    chan struct{} // closed when Run has returned
	runErr  error         // Run's result, once done is closed
	stopped sync.Once
}

// Start starts FerretDB with its SQLite data under dir, listening on an
// ephemeral loopback port, and returns once it accepts connections (or
// ctx ends). Its log goes to logTo (nil: discarded).
func Start(ctx context.Context, dir string, logTo io.Writer) (*Server, error) {
	if logTo == nil {
		logTo = io.Discard
	}
	if !strings.HasSuffix(dir, "/") {
		dir += "/" // the SQLite handler wants a directory URI
	}
	nameVersionOnce.Do(nameVersion)
	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: "127.0.0.1:0"},
		Logger:    slog.New(slog.NewTextHandler(logTo, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Handler:   "sqlite",
		SQLiteURL: "file:" + dir,
	})
	if err != nil {
		return nil, fmt.Errorf("ferretdb: configure: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	s := &Server{cancel: cancel, done: make(chan struct{})}
	go func() {
		s.runErr = f.Run(runCtx)
		close(s.done)
	}()

	// MongoDBURI waits for the listener's address; it is read off the
	// caller's goroutine so that a listener that never comes up cannot
	// hang past ctx.
	uriCh := make(chan string, 1)
	go func() { uriCh <- f.MongoDBURI() }()
	select {
	case s.uri = <-uriCh:
	case <-s.done:
		cancel()
		return nil, fmt.Errorf("ferretdb: stopped before listening: %v", s.runErr)
	case <-ctx.Done():
		s.Stop(context.Background())
		return nil, fmt.Errorf("ferretdb: waiting for the listener: %w", ctx.Err())
	}
	return s, nil
}

// nameVersion makes buildInfo's ferretdbVersion name the release that
// is linked in. An embedded FerretDB reads its version from files that
// only its own release builds generate, and answers "unknown" otherwise;
// the version of the FerretDB module in this binary's build information
// is the same fact, so it is given instead (the pinned Version when the
// binary carries no module information).
var nameVersionOnce sync.Once

func nameVersion() {
	info := version.Get()
	if info.Version != "unknown" && info.Version != "" {
		return
	}
	info.Version = Version
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range bi.Deps {
			if dep.Path == "github.com/FerretDB/FerretDB" && dep.Version != "" {
				info.Version = dep.Version
			}
		}
	}
}

// URI is the server's connection string (a standalone: connect directly).
func (s *Server) URI() string { return s.uri }

// Stop stops the server and waits, at most until ctx ends, for its
// listener, connections and backend to close.
func (s *Server) Stop(ctx context.Context) error {
	s.stopped.Do(s.cancel)
	select {
	case <-s.done:
		return s.runErr
	case <-ctx.Done():
		return fmt.Errorf("ferretdb: stopping: %w", ctx.Err())
	}
}
