package mongosim

import (
	"path/filepath"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/ftdc"
)

// Full-time diagnostic data capture, as mongod keeps it: a member with a
// dbpath (cmd/mongosim --dbpath, or Options.DiagnosticDataDir) records a
// sample every diagnosticDataCollectionPeriodMillis into
// <dbpath>/diagnostic.data through ftdc.Writer: 300 samples a chunk, the
// chunk being built rewritten into metrics.interim every 10 samples, a new
// file past 10 MB, the oldest deleted past 500 MB (the diagnosticData*
// server parameters), and at the start of every file a metadata document
// of buildInfo, getCmdLineOpts and hostInfo. A sample is
//
//	{start, serverStatus: {start, …the serverStatus reply…, end},
//	 replSetGetStatus: {start, …, end}, end}
//
// with replSetGetStatus only while the member has a replica-set config.
// Like every reply of mongosim the documents say they are simulated
// (buildInfo.mongosim, serverStatus.mongosim).
//
// Shutdown archives everything (the interim file is removed); Kill, like
// SIGKILL or the OOM killer, leaves the interim file as last rewritten,
// and the next start in the same directory takes it into its first file.

// DiagnosticDataDir is where a member whose dbpath is dbpath keeps its
// diagnostic data.
func DiagnosticDataDir(dbpath string) string { return filepath.Join(dbpath, "diagnostic.data") }

// ftdcCollector is a member's diagnostic data capture.
type ftdcCollector struct {
	w     *ftdc.Writer
	clean chan struct{} // closed by Shutdown: archive and stop
	once  sync.Once
	done  chan struct{}
}

// diagnosticDir is the member's diagnostic.data directory ("" for none).
func (s *Server) diagnosticDir() string {
	if s.opts.DiagnosticDataDir != "" {
		return s.opts.DiagnosticDataDir
	}
	if ds, ok := s.store.(*DirStorage); ok && ds.Dir != "" {
		return DiagnosticDataDir(ds.Dir)
	}
	return ""
}

// startFTDC starts the member's diagnostic data capture when it has a
// directory for it and diagnosticDataCollectionEnabled is on. A failure
// is logged, as mongod logs it, and the member runs without.
func (s *Server) startFTDC() {
	dir := s.diagnosticDir()
	if dir == "" || !s.params.Bool("diagnosticDataCollectionEnabled") {
		return
	}
	w, err := ftdc.NewWriter(dir, ftdc.WriterOptions{
		SamplesPerChunk:  int(s.params.Int("diagnosticDataCollectionSamplesPerChunk")),
		InterimSamples:   int(s.params.Int("diagnosticDataCollectionSamplesPerInterimUpdate")),
		MaxFileSize:      s.params.Int("diagnosticDataCollectionFileSizeMB") << 20,
		MaxDirectorySize: s.params.Int("diagnosticDataCollectionDirectorySizeMB") << 20,
		Metadata:         s.ftdcMetadata(),
	})
	if err != nil {
		s.log.Error("diagnostic data capture failed to start; running without it", "dir", dir, "err", err)
		return
	}
	c := &ftdcCollector{w: w, clean: make(chan struct{}), done: make(chan struct{})}
	s.ftdc = c
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(c.done)
		s.ftdcLoop(c)
	}()
}

func (s *Server) ftdcLoop(c *ftdcCollector) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-c.clean:
			if err := c.w.Close(); err != nil {
				s.log.Error("closing diagnostic data", "err", err)
			}
			return
		case <-s.ctx.Done():
			_ = c.w.Abort() // killed: the interim file stays
			return
		case <-t.C:
		}
		if !s.params.Bool("diagnosticDataCollectionEnabled") {
			t.Reset(time.Second)
			continue
		}
		if err := c.w.Add(s.ftdcSample()); err != nil {
			s.log.Error("writing diagnostic data", "err", err)
		}
		t.Reset(time.Duration(s.params.Int("diagnosticDataCollectionPeriodMillis")) * time.Millisecond)
	}
}

// ftdcSample is one diagnostic sample: the serverStatus and
// replSetGetStatus replies, each between its start and end times.
func (s *Server) ftdcSample() bson.D {
	start := time.Now()
	r := &request{conn: &conn{s: s}, name: "serverStatus"}
	doc := bson.D{{Key: "start", Value: start}}
	if ss, err := s.cmdServerStatus(r); err == nil {
		doc = append(doc, bson.E{Key: "serverStatus", Value: collectorDoc(start, ss)})
	}
	if !s.standalone() {
		t := time.Now()
		if rs, err := s.cmdReplSetGetStatus(&request{conn: r.conn, name: "replSetGetStatus"}); err == nil {
			doc = append(doc, bson.E{Key: "replSetGetStatus", Value: collectorDoc(t, rs)})
		}
	}
	return append(doc, bson.E{Key: "end", Value: time.Now()})
}

// collectorDoc is one collector's reply between its start and end dates,
// as mongod's FTDC records it.
func collectorDoc(start time.Time, reply bson.D) bson.D {
	d := make(bson.D, 0, len(reply)+2)
	d = append(d, bson.E{Key: "start", Value: start})
	d = append(d, reply...)
	return append(d, bson.E{Key: "end", Value: time.Now()})
}

// ftdcMetadata is the document at the start of every diagnostic file.
func (s *Server) ftdcMetadata() bson.D {
	start := time.Now()
	r := &request{conn: &conn{s: s}}
	opts, _ := s.cmdGetCmdLineOpts(r)
	host, _ := s.cmdHostInfo(r)
	return bson.D{{Key: "start", Value: start},
		{Key: "buildInfo", Value: collectorDoc(start, s.buildInfo())},
		{Key: "getCmdLineOpts", Value: collectorDoc(start, opts)},
		{Key: "hostInfo", Value: collectorDoc(start, host)},
		{Key: "end", Value: time.Now()}}
}

// Shutdown stops the member as mongod stops on SIGTERM: its diagnostic
// data is archived whole (no interim file left), then it stops serving.
func (s *Server) Shutdown() {
	if c := s.ftdc; c != nil {
		c.once.Do(func() { close(c.clean) })
		<-c.done
	}
	s.Kill()
}
