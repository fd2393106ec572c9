package mongosim

import (
	"errors"
	"slices"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
)

// failPointNames lists the failpoints configureFailPoint accepts; the model
// registers its own beside failCommand.
var failPointNames = []string{"failCommand"}

type failPoint struct {
	mode    string // off | alwaysOn | times | skip
	n       int64
	data    bson.Raw
	entered int64
}

type failPoints struct {
	mu sync.Mutex
	m  map[string]*failPoint
}

func newFailPoints() *failPoints { return &failPoints{m: map[string]*failPoint{}} }

// hit reports whether the failpoint fires now, and its data.
func (f *failPoints) hit(name string) (bson.Raw, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fp := f.m[name]
	if fp == nil || fp.mode == "off" {
		return nil, false
	}
	switch fp.mode {
	case "times":
		if fp.n <= 0 {
			return nil, false
		}
		fp.n--
	case "skip":
		if fp.n > 0 {
			fp.n--
			return nil, false
		}
	}
	fp.entered++
	return fp.data, true
}

// active reports whether the failpoint is on, without counting an entry.
func (f *failPoints) active(name string) (bson.Raw, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fp := f.m[name]
	if fp == nil || fp.mode == "off" || (fp.mode == "times" && fp.n <= 0) {
		return nil, false
	}
	return fp.data, true
}

func (s *Server) cmdConfigureFailPoint(r *request) (bson.D, error) {
	name := r.str("configureFailPoint")
	if !slices.Contains(failPointNames, name) {
		return nil, mongoerr.New(mongoerr.BadValue, "Cannot find failpoint: %s", name)
	}
	fp := &failPoint{mode: "off", data: r.doc("data")}
	mode := r.body.Lookup("mode")
	if m, ok := mode.StringValueOK(); ok {
		if m != "off" && m != "alwaysOn" {
			return nil, mongoerr.New(mongoerr.BadValue, "unknown mode: %s", m)
		}
		fp.mode = m
	} else if d, ok := mode.DocumentOK(); ok {
		elems, _ := bson.Raw(d).Elements()
		for _, e := range elems {
			n, _ := e.Value().AsInt64OK()
			switch e.Key() {
			case "times", "skip":
				fp.mode, fp.n = e.Key(), n
			default:
				return nil, mongoerr.New(mongoerr.BadValue, "unknown mode: %s", e.Key())
			}
		}
	} else {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "'mode' must be a string or an object")
	}
	s.fail.mu.Lock()
	var prev int64
	if old := s.fail.m[name]; old != nil {
		prev = old.entered
	}
	s.fail.m[name] = fp
	s.fail.mu.Unlock()
	s.log.Info("failpoint set", "name", name, "mode", fp.mode)
	return bson.D{{Key: "count", Value: prev}}, nil
}

var errCloseConnection = errors.New("failCommand: close connection")

// failCommand applies the failCommand failpoint, as drivers' tests use it:
// data {failCommands:[names], appName, errorCode, errorLabels,
// closeConnection, blockConnection, blockTimeMS}.
func (f *failPoints) failCommand(r *request) error {
	data, on := f.active("failCommand")
	if !on {
		return nil
	}
	names, _ := data.Lookup("failCommands").ArrayOK()
	vals, _ := names.Values()
	match := false
	for _, v := range vals {
		if v.StringValue() == r.name {
			match = true
		}
	}
	if app, ok := data.Lookup("appName").StringValueOK(); ok {
		_, connApp := r.conn.metadata()
		match = match && app == connApp
	}
	if !match {
		return nil
	}
	if _, hit := f.hit("failCommand"); !hit {
		return nil
	}
	if b, _ := data.Lookup("blockConnection").BooleanOK(); b {
		ms, _ := data.Lookup("blockTimeMS").AsInt64OK()
		time.Sleep(time.Duration(ms) * time.Millisecond)
	}
	if b, _ := data.Lookup("closeConnection").BooleanOK(); b {
		return errCloseConnection
	}
	if code, ok := data.Lookup("errorCode").AsInt64OK(); ok {
		e := mongoerr.New(int32(code), "Failing command via 'failCommand' failpoint")
		if labels, ok := data.Lookup("errorLabels").ArrayOK(); ok {
			lv, _ := labels.Values()
			for _, l := range lv {
				e.Labels = append(e.Labels, l.StringValue())
			}
		}
		return e
	}
	return nil
}
