package mongosim

import (
	"fmt"
	"slices"
	"strconv"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
)

// paramSpec declares one server parameter: its default, and whether it may
// be set at startup (--setParameter) and at runtime (setParameter).
type paramSpec struct {
	name    string
	def     any // int64, float64, bool or string
	runtime bool
}

// paramSpecs is the parameter table; the model adds its parameters here.
var paramSpecs = []paramSpec{
	{"logLevel", int64(0), true},
	{"allowDiskUseByDefault", true, true},
	{"internalQueryMaxBlockingSortMemoryUsageBytes", int64(104857600), true},
	{"internalDocumentSourceGroupMaxMemoryBytes", int64(104857600), true},
	{"internalDocumentSourceSetWindowFieldsMaxMemoryBytes", int64(104857600), true},
	{"enableTestCommands", true, false},
}

type parameters struct {
	mu   sync.Mutex
	vals map[string]any
}

func findParam(name string) (paramSpec, bool) {
	i := slices.IndexFunc(paramSpecs, func(p paramSpec) bool { return p.name == name })
	if i < 0 {
		return paramSpec{}, false
	}
	return paramSpecs[i], true
}

func newParameters(startup map[string]string) (*parameters, error) {
	p := &parameters{vals: map[string]any{}}
	for _, s := range paramSpecs {
		p.vals[s.name] = s.def
	}
	for k, v := range startup {
		spec, ok := findParam(k)
		if !ok {
			return nil, fmt.Errorf("Unknown --setParameter '%s'", k)
		}
		val, err := parseParam(spec, v)
		if err != nil {
			return nil, fmt.Errorf("Bad value for parameter \"%s\": %v", k, err)
		}
		p.vals[k] = val
	}
	return p, nil
}

func parseParam(spec paramSpec, s string) (any, error) {
	switch spec.def.(type) {
	case int64:
		return strconv.ParseInt(s, 10, 64)
	case float64:
		return strconv.ParseFloat(s, 64)
	case bool:
		return strconv.ParseBool(s)
	}
	return s, nil
}

// coerce converts a setParameter value to the parameter's type.
func coerce(spec paramSpec, v bson.RawValue) (any, error) {
	switch spec.def.(type) {
	case int64:
		if n, ok := v.AsInt64OK(); ok {
			return n, nil
		}
	case float64:
		if f, ok := v.AsFloat64OK(); ok {
			return f, nil
		}
	case bool:
		if b, ok := v.BooleanOK(); ok {
			return b, nil
		}
		if n, ok := v.AsInt64OK(); ok {
			return n != 0, nil
		}
	case string:
		if s, ok := v.StringValueOK(); ok {
			return s, nil
		}
	}
	return nil, mongoerr.New(mongoerr.BadValue, "Invalid value for parameter %s: %s", spec.name, v.String())
}

// Get returns a parameter's value.
func (p *parameters) Get(name string) any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.vals[name]
}

// Int returns an integer parameter.
func (p *parameters) Int(name string) int64 { n, _ := p.Get(name).(int64); return n }

// Float returns a float parameter.
func (p *parameters) Float(name string) float64 { f, _ := p.Get(name).(float64); return f }

// Bool returns a boolean parameter.
func (p *parameters) Bool(name string) bool { b, _ := p.Get(name).(bool); return b }

func (p *parameters) set(name string, v any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.vals[name] = v
}

func (s *Server) cmdGetParameter(r *request) (bson.D, error) {
	all := false
	if str, ok := r.body.Lookup("getParameter").StringValueOK(); ok && str == "*" {
		all = true
	}
	out := bson.D{}
	if all {
		for _, spec := range paramSpecs {
			out = append(out, bson.E{Key: spec.name, Value: s.params.Get(spec.name)})
		}
		out = append(out, bson.E{Key: "featureCompatibilityVersion", Value: bson.D{{Key: "version", Value: "8.0"}}})
		return out, nil
	}
	elems, _ := r.body.Elements()
	for _, e := range elems[1:] {
		k := e.Key()
		if genericArguments[k] {
			continue
		}
		if k == "featureCompatibilityVersion" {
			out = append(out, bson.E{Key: k, Value: bson.D{{Key: "version", Value: "8.0"}}})
			continue
		}
		if _, ok := findParam(k); ok {
			out = append(out, bson.E{Key: k, Value: s.params.Get(k)})
		}
	}
	if len(out) == 0 {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "no option found to get")
	}
	return out, nil
}

func (s *Server) cmdSetParameter(r *request) (bson.D, error) {
	if r.db != "admin" {
		return nil, mongoerr.New(mongoerr.Unauthorized, "setParameter may only be run against the admin database.")
	}
	elems, _ := r.body.Elements()
	out := bson.D{}
	n := 0
	for _, e := range elems[1:] {
		k := e.Key()
		if genericArguments[k] {
			continue
		}
		spec, ok := findParam(k)
		if !ok {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "attempted to set unrecognized parameter [%s], use help:true to see options ", k)
		}
		if !spec.runtime {
			return nil, mongoerr.New(mongoerr.BadValue, "not allowed to change [%s] at runtime", k)
		}
		v, err := coerce(spec, e.Value())
		if err != nil {
			return nil, err
		}
		out = append(out, bson.E{Key: "was", Value: s.params.Get(k)})
		s.params.set(k, v)
		if s.sim != nil {
			s.sim.mu.Lock()
			s.sim.node.SetParams(s.modelParams())
			s.sim.mu.Unlock()
		}
		s.log.Info("setParameter", "name", k, "value", v)
		n++
	}
	if n == 0 {
		return nil, mongoerr.New(mongoerr.NoSuchKey, "no option found to set, use help:true to see options ")
	}
	return out, nil
}
