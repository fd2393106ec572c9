package mongosim

import (
	"fmt"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/model"
	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
)

// The server's parameters are the model's table (model.ParamSpecs): one
// declaration of each name, type, default and bound serves startup
// --setParameter, setParameter, getParameter and the model itself.

type parameters struct {
	mu   sync.Mutex
	vals map[string]any
}

func findParam(name string) (model.ParamSpec, bool) { return model.LookupParam(name) }

func newParameters(startup map[string]string) (*parameters, error) {
	p := &parameters{vals: map[string]any{}}
	for _, s := range model.ParamSpecs {
		p.vals[s.Name] = s.Default
	}
	// mongosim is a test server: it starts as mongod does under its test
	// harness, with test commands (failpoints) on.
	p.vals["enableTestCommands"] = true
	for k, v := range startup {
		spec, ok := findParam(k)
		if !ok {
			return nil, fmt.Errorf("Unknown --setParameter '%s'", k)
		}
		val, err := spec.ParseValue(v)
		if err != nil {
			return nil, fmt.Errorf("Bad value for parameter \"%s\": %v", k, err)
		}
		p.vals[k] = val
	}
	if _, err := model.ParamsOf(p.vals); err != nil {
		return nil, fmt.Errorf("Bad value for parameters: %v", err)
	}
	return p, nil
}

// coerce converts a setParameter value to the parameter's type.
func coerce(spec model.ParamSpec, v bson.RawValue) (any, error) {
	var x any
	switch v.Type {
	case bson.TypeInt32:
		x = v.Int32()
	case bson.TypeInt64:
		x = v.Int64()
	case bson.TypeDouble:
		x = v.Double()
	case bson.TypeBoolean:
		x = v.Boolean()
	case bson.TypeString:
		x = v.StringValue()
	default:
		x = v.String()
	}
	out, err := spec.Coerce(x)
	if err != nil {
		return nil, mongoerr.New(mongoerr.BadValue, "Invalid value for parameter %s: %s", spec.Name, v.String())
	}
	return out, nil
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
		for _, spec := range model.ParamSpecs {
			out = append(out, bson.E{Key: spec.Name, Value: s.params.Get(spec.Name)})
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
		if !spec.Runtime {
			return nil, mongoerr.New(mongoerr.BadValue, "not allowed to change [%s] at runtime", k)
		}
		v, err := coerce(spec, e.Value())
		if err != nil {
			return nil, err
		}
		was := s.params.Get(k)
		s.params.set(k, v)
		if _, err := model.ParamsOf(s.params.all()); err != nil {
			s.params.set(k, was)
			return nil, mongoerr.New(mongoerr.BadValue, "Invalid value for parameter %s: %v", k, err)
		}
		out = append(out, bson.E{Key: "was", Value: was})
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

func (p *parameters) all() map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]any, len(p.vals))
	for k, v := range p.vals {
		out[k] = v
	}
	return out
}
