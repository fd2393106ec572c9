package arms

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/qmlsab/qmlsab/arms/killop"
	"github.com/qmlsab/qmlsab/internal/mongouri"
	"github.com/qmlsab/qmlsab/internal/yamlfile"
)

// LoadFile reads and validates an arms file.
func LoadFile(path string) ([]Arm, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading arms file: %w", err)
	}
	return Parse(path, b)
}

// Parse validates an arms document strictly: unknown keys, wrong types,
// a target without its mongod or uri, duplicate names and unknown actor
// types are errors naming the file and line. Anchors, aliases and merge
// keys share settings between arms (yamlfile.Expand, within its limit), and
// a top-level key whose value defines an anchor ("common: &common {…}") is
// a definition, not an unknown key. The YAML is decoded by hand
// from yaml.v3's node tree because its struct decoder reports neither the
// line of a type mismatch per field nor unknown keys together with lines.
func Parse(file string, data []byte) ([]Arm, error) {
	doc, err := yamlfile.ParseDocument(file, data)
	if err != nil {
		return nil, err
	}
	p := parser{file: file}
	if len(doc.Content) == 0 {
		return nil, yamlfile.Errorf(file, 1, "empty arms file; want a mapping with an 'arms' list")
	}
	var defs []*yaml.Node // top-level keys that only define an anchor
	if r := doc.Content[0]; r.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(r.Content); i += 2 {
			if yamlfile.IsDefinition(r.Content[i], r.Content[i+1], map[string]bool{"arms": true}) {
				defs = append(defs, r.Content[i])
			}
		}
	}
	if err := yamlfile.Expand(file, doc); err != nil {
		return nil, err
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, p.errf(root, "want a mapping with an 'arms' list, got %s", yamlfile.KindName(root))
	}
	var armsNode *yaml.Node
	for i := 0; i < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "arms":
			armsNode = v
		default:
			if !slices.ContainsFunc(defs, func(d *yaml.Node) bool { return d.Value == k.Value && d.Line == k.Line }) {
				return nil, p.errf(k, "unknown key %q (want 'arms', or a key whose value defines an &anchor for aliases)", k.Value)
			}
		}
	}
	if armsNode == nil {
		return nil, p.errf(root, "missing 'arms' list")
	}
	if armsNode.Kind != yaml.SequenceNode || len(armsNode.Content) == 0 {
		return nil, p.errf(armsNode, "'arms' must be a non-empty list")
	}
	var out []Arm
	lines := map[string]int{}
	for _, n := range armsNode.Content {
		a, err := p.arm(n)
		if err != nil {
			return nil, err
		}
		if first, dup := lines[a.Name]; dup {
			return nil, p.errf(n, "duplicate arm name %q (first defined at line %d)", a.Name, first)
		}
		lines[a.Name] = n.Line
		out = append(out, a)
	}
	return out, nil
}

type parser struct{ file string }

func (p parser) errf(n *yaml.Node, format string, args ...any) error {
	return yamlfile.Errorf(p.file, n.Line, format, args...)
}

func (p parser) str(n *yaml.Node, field string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", p.errf(n, "%s: want a string, got %s", field, yamlfile.KindName(n))
	}
	return n.Value, nil
}

func (p parser) arm(n *yaml.Node) (Arm, error) {
	if n.Kind != yaml.MappingNode {
		return Arm{}, p.errf(n, "an arm must be a mapping, got %s", yamlfile.KindName(n))
	}
	a := Arm{Target: TargetEmbedded, SetParameters: map[string]string{}}
	var err error
	var nameSeen bool
	var shardedNode *yaml.Node
	for i := 0; i < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "name":
			a.Name, err = p.str(v, "name")
			nameSeen = true
		case "description":
			a.Description, err = p.str(v, "description")
		case "build":
			a.Build, err = p.str(v, "build")
		case "target":
			a.Target, err = p.str(v, "target")
			if err == nil && !slices.Contains([]string{TargetEmbedded, TargetLocal, TargetURI}, a.Target) {
				err = p.errf(v, "target: %q is not one of embedded, local, uri", a.Target)
			}
		case "mongod":
			a.Mongod, err = p.str(v, "mongod")
		case "uri":
			a.URI, err = p.str(v, "uri")
			if err == nil {
				if _, perr := mongouri.Parse(a.URI); perr != nil {
					err = p.errf(v, "uri %v", perr)
				}
			}
		case "topology":
			a.Topology, err = p.str(v, "topology")
			if err == nil && a.Topology != TopologyReplicaSet && a.Topology != TopologySharded {
				err = p.errf(v, "topology: %q is not one of %s, %s", a.Topology, TopologyReplicaSet, TopologySharded)
			}
		case "sharded":
			a.Sharded, err = p.sharded(v)
			shardedNode = v
		case "setParameters":
			err = p.setParameters(v, a.SetParameters)
		case "actors":
			a.Actors, err = p.actors(v)
		default:
			err = p.errf(k, "unknown key %q in arm (known: name, description, build, target, mongod, uri, topology, sharded, setParameters, actors)", k.Value)
		}
		if err != nil {
			return Arm{}, err
		}
	}
	switch {
	case !nameSeen || a.Name == "":
		return Arm{}, p.errf(n, "arm without a name")
	case strings.ContainsAny(a.Name, ", \t"):
		return Arm{}, p.errf(n, "arm name %q must not contain commas or spaces (a list of arms is comma-separated)", a.Name)
	case a.Target == TargetLocal && a.Mongod == "":
		return Arm{}, p.errf(n, "arm %s: target local needs 'mongod' (the path of a mongod binary)", a.Name)
	case a.Target == TargetURI && a.URI == "":
		return Arm{}, p.errf(n, "arm %s: target uri needs 'uri'", a.Name)
	case a.Target != TargetURI && a.URI != "":
		return Arm{}, p.errf(n, "arm %s: 'uri' is only for target uri", a.Name)
	case a.Target != TargetLocal && a.Mongod != "":
		return Arm{}, p.errf(n, "arm %s: 'mongod' is only for target local", a.Name)
	case shardedNode != nil && a.Topology == "":
		a.Topology = TopologySharded // a sharded: block says it
	case shardedNode != nil && a.Topology != TopologySharded:
		return Arm{}, p.errf(shardedNode, "arm %s: 'sharded' sizes a sharded cluster, but topology is %s", a.Name, a.Topology)
	}
	switch {
	case shardedNode != nil && a.Target == TargetURI:
		return Arm{}, p.errf(shardedNode, "arm %s: 'sharded' is for the targets qmlsab starts (embedded, local); a uri target naming a mongos is sharded as discovered", a.Name)
	case a.Target == TargetLocal && a.IsSharded() && a.Sharded.Mongos == "":
		return Arm{}, p.errf(n, "arm %s: a sharded local target needs 'sharded: {mongos: <path of a mongos binary>}' (cmd/mongosim under a name starting with mongos will do)", a.Name)
	case a.Target != TargetLocal && a.Sharded.Mongos != "":
		return Arm{}, p.errf(shardedNode, "arm %s: 'sharded.mongos' is only for target local", a.Name)
	}
	if a.IsSharded() {
		a.Sharded = a.Sharded.WithDefaults()
	}
	return a, nil
}

// sharded reads a sharded: block (shards, membersPerShard, configMembers,
// routers, mongos).
func (p parser) sharded(n *yaml.Node) (Sharded, error) {
	var s Sharded
	if n.Kind != yaml.MappingNode {
		return s, p.errf(n, "sharded: want a mapping, got %s", yamlfile.KindName(n))
	}
	count := func(v *yaml.Node, field string, limit int) (int, error) {
		x, err := strconv.Atoi(v.Value)
		if err != nil || v.Kind != yaml.ScalarNode || x < 1 || x > limit {
			return 0, p.errf(v, "sharded.%s: want an integer in [1, %d], got %s", field, limit, yamlfile.KindName(v))
		}
		return x, nil
	}
	for i := 0; i < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		var err error
		switch k.Value {
		case "shards":
			s.Shards, err = count(v, "shards", 16)
		case "membersPerShard":
			s.MembersPerShard, err = count(v, "membersPerShard", 7)
		case "configMembers":
			s.ConfigMembers, err = count(v, "configMembers", 7)
		case "routers":
			s.Routers, err = count(v, "routers", 8)
		case "mongos":
			s.Mongos, err = p.str(v, "sharded.mongos")
		default:
			err = p.errf(k, "unknown key %q in sharded (known: shards, membersPerShard, configMembers, routers, mongos)", k.Value)
		}
		if err != nil {
			return s, err
		}
	}
	return s, nil
}

func (p parser) setParameters(n *yaml.Node, into map[string]string) error {
	if n.Kind != yaml.MappingNode {
		return p.errf(n, "setParameters: want a mapping of name: value, got %s", yamlfile.KindName(n))
	}
	for i := 0; i < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
			return p.errf(v, "setParameters.%s: want a number, boolean or string, got %s", k.Value, yamlfile.KindName(v))
		}
		into[k.Value] = v.Value
	}
	return nil
}

func (p parser) actors(n *yaml.Node) ([]Actor, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n, "actors: want a list, got %s", yamlfile.KindName(n))
	}
	var out []Actor
	for _, an := range n.Content {
		if an.Kind != yaml.MappingNode || len(an.Content) != 2 {
			return nil, p.errf(an, "an actor is a mapping with one key: its type (killop or exec)")
		}
		k, v := an.Content[0], an.Content[1]
		switch k.Value {
		case "killop":
			c, err := p.killop(v)
			if err != nil {
				return nil, err
			}
			out = append(out, Actor{KillOp: &c})
		case "exec":
			e, err := p.exec(v)
			if err != nil {
				return nil, err
			}
			out = append(out, Actor{Exec: &e})
		default:
			return nil, p.errf(k, "unknown actor type %q (known: killop, exec)", k.Value)
		}
	}
	return out, nil
}

func (p parser) killop(n *yaml.Node) (killop.Config, error) {
	c := killop.Default("")
	if n.Kind != yaml.MappingNode {
		return c, p.errf(n, "killop: want a mapping, got %s", yamlfile.KindName(n))
	}
	for i := 0; i < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		var err error
		switch k.Value {
		case "rssHighPercent":
			c.RSSHighPercent, err = strconv.ParseFloat(v.Value, 64)
			// Written so that NaN (which strconv reads, and which every
			// comparison answers false) fails it too.
			if err != nil || v.Kind != yaml.ScalarNode || !(c.RSSHighPercent > 0 && c.RSSHighPercent <= 100) {
				return c, p.errf(v, "killop.rssHighPercent: want a number in (0, 100], got %s", yamlfile.KindName(v))
			}
		case "interval":
			c.Interval, err = time.ParseDuration(v.Value)
			if err != nil || v.Kind != yaml.ScalarNode || c.Interval <= 0 {
				return c, p.errf(v, "killop.interval: want a positive duration such as 100ms, got %s", yamlfile.KindName(v))
			}
		case "appName":
			c.AppName, err = p.str(v, "killop.appName")
		case "anyApp":
			c.AnyApp, err = strconv.ParseBool(v.Value)
			if err != nil || v.Kind != yaml.ScalarNode {
				return c, p.errf(v, "killop.anyApp: want true or false, got %s", yamlfile.KindName(v))
			}
		case "maxKillsPerRound":
			c.MaxKillsPerRound, err = strconv.Atoi(v.Value)
			if err != nil || v.Kind != yaml.ScalarNode || c.MaxKillsPerRound < 1 {
				return c, p.errf(v, "killop.maxKillsPerRound: want a positive integer, got %s", yamlfile.KindName(v))
			}
		case "policy":
			c.Policy, err = p.str(v, "killop.policy")
			if err == nil && !killop.ValidPolicy(c.Policy) {
				return c, p.errf(v, "killop.policy: %q is not one of %s", c.Policy, strings.Join(killop.Policies, ", "))
			}
		default:
			return c, p.errf(k, "unknown key %q in killop (known: rssHighPercent, interval, appName, anyApp, maxKillsPerRound, policy)", k.Value)
		}
		if err != nil {
			return c, err
		}
	}
	if c.AppName == "" && !c.AnyApp {
		c.AppName = StormAppName // the workload's own operations only
	}
	return c, nil
}

func (p parser) exec(n *yaml.Node) (ExecActor, error) {
	var e ExecActor
	if n.Kind != yaml.MappingNode {
		return e, p.errf(n, "exec: want a mapping, got %s", yamlfile.KindName(n))
	}
	for i := 0; i < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "command":
			if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
				return e, p.errf(v, "exec.command: want a non-empty list of strings")
			}
			for _, s := range v.Content {
				str, err := p.str(s, "exec.command")
				if err != nil {
					return e, err
				}
				e.Command = append(e.Command, str)
			}
		case "env":
			e.Env = map[string]string{}
			if err := p.setParameters(v, e.Env); err != nil {
				return e, p.errf(v, "exec.env: want a mapping of name: value")
			}
		default:
			return e, p.errf(k, "unknown key %q in exec (known: command, env)", k.Value)
		}
	}
	if len(e.Command) == 0 {
		return e, p.errf(n, "exec needs a command")
	}
	return e, nil
}

// Marshal renders arms as an arms file (credentials redacted); Parse of
// the result gives the same arms back, their topology and a sharded
// cluster's size included (a run's manifest records its arms so, and a
// resumed run runs them as recorded).
func Marshal(list []Arm) ([]byte, error) {
	type killopY struct {
		RSSHighPercent   float64 `yaml:"rssHighPercent"`
		Interval         string  `yaml:"interval"`
		AppName          string  `yaml:"appName,omitempty"`
		AnyApp           bool    `yaml:"anyApp,omitempty"`
		MaxKillsPerRound int     `yaml:"maxKillsPerRound,omitempty"`
		Policy           string  `yaml:"policy,omitempty"`
	}
	type execY struct {
		Command []string          `yaml:"command"`
		Env     map[string]string `yaml:"env,omitempty"`
	}
	type shardedY struct {
		Shards          int    `yaml:"shards"`
		MembersPerShard int    `yaml:"membersPerShard"`
		ConfigMembers   int    `yaml:"configMembers"`
		Routers         int    `yaml:"routers"`
		Mongos          string `yaml:"mongos,omitempty"`
	}
	type actorY struct {
		KillOp *killopY `yaml:"killop,omitempty"`
		Exec   *execY   `yaml:"exec,omitempty"`
	}
	type armY struct {
		Name          string            `yaml:"name"`
		Description   string            `yaml:"description,omitempty"`
		Build         string            `yaml:"build,omitempty"`
		Target        string            `yaml:"target"`
		Mongod        string            `yaml:"mongod,omitempty"`
		URI           string            `yaml:"uri,omitempty"`
		Topology      string            `yaml:"topology,omitempty"`
		Sharded       *shardedY         `yaml:"sharded,omitempty"`
		SetParameters map[string]string `yaml:"setParameters"`
		Actors        []actorY          `yaml:"actors,omitempty"`
	}
	var doc struct {
		Arms []armY `yaml:"arms"`
	}
	for _, a := range list {
		a = a.Redacted()
		y := armY{Name: a.Name, Description: a.Description, Build: a.Build, Target: a.Target, Mongod: a.Mongod, URI: a.URI,
			Topology: a.Topology, SetParameters: a.SetParameters}
		if a.IsSharded() && a.Target != TargetURI {
			// A uri target is sharded as discovered: it has no size.
			s := a.Sharded.WithDefaults()
			y.Sharded = &shardedY{s.Shards, s.MembersPerShard, s.ConfigMembers, s.Routers, s.Mongos}
		}
		for _, act := range a.Actors {
			switch {
			case act.KillOp != nil:
				k := act.KillOp
				y.Actors = append(y.Actors, actorY{KillOp: &killopY{k.RSSHighPercent, k.Interval.String(), k.AppName, k.AnyApp, k.MaxKillsPerRound, k.Policy}})
			case act.Exec != nil:
				y.Actors = append(y.Actors, actorY{Exec: &execY{act.Exec.Command, act.Exec.Env}})
			}
		}
		doc.Arms = append(doc.Arms, y)
	}
	return yaml.Marshal(doc)
}
