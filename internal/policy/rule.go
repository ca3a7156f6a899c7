package policy

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/agentbox/agentbox/internal/command"
	"github.com/agentbox/agentbox/internal/secret"
	"go.yaml.in/yaml/v3"
)

// Version is the policy file format this package reads.
const Version = 1

// File is a policy as written: a version and a list of rules, in YAML or JSON.
type File struct {
	Version int    `json:"version" yaml:"version"`
	Rules   []Rule `json:"rules" yaml:"rules"`
}

// Rule decides the needs it matches. Every field given must match (an absent one
// matches anything); a list matches if any entry does. A rule names at most one
// kind of target: paths, domains or commands.
type Rule struct {
	Name        string   `json:"name" yaml:"name"`
	Description string   `json:"description,omitempty" yaml:"description,omitempty"`
	Decision    Decision `json:"decision" yaml:"decision"`

	Tools    []string       `json:"tools,omitempty" yaml:"tools,omitempty"`     // tool names, '*' globs
	Servers  []string       `json:"servers,omitempty" yaml:"servers,omitempty"` // MCP server ids, '*' globs
	Effect   []Effect       `json:"effect,omitempty" yaml:"effect,omitempty"`
	Paths    []string       `json:"paths,omitempty" yaml:"paths,omitempty"`       // PathGlob
	Domains  []string       `json:"domains,omitempty" yaml:"domains,omitempty"`   // DomainPattern
	Commands []string       `json:"commands,omitempty" yaml:"commands,omitempty"` // command.Pattern
	Data     []secret.Class `json:"data,omitempty" yaml:"data,omitempty"`
	Hints    *HintMatch     `json:"hints,omitempty" yaml:"hints,omitempty"`
	// Network matches an exec whose sandbox can (true) or cannot (false) reach the
	// network; a network need is always true, every other need false.
	Network *bool `json:"network,omitempty" yaml:"network,omitempty"`

	// EveryTime (ask rules): no session grant covers the need; each call is asked
	// and approved on its own.
	EveryTime bool `json:"every_time,omitempty" yaml:"every_time,omitempty"`
	// Grantable (deny rules): a grant of the need's capability lifts the denial;
	// the session is not asked, a person must grant it (sensitive:read).
	Grantable bool `json:"grantable,omitempty" yaml:"grantable,omitempty"`
	// Show lists what an approval or the trace must show: diff, domain, data,
	// command.
	Show []string `json:"show,omitempty" yaml:"show,omitempty"`
}

// HintMatch matches a tool's hints (Hints). For hints a server gave, an allow rule
// never matches on them, and an ask or deny rule matches a condition that names
// the dangerous value (destructive: true, open_world: true, read_only: false,
// idempotent: false) whatever the server claims.
type HintMatch struct {
	ReadOnly    *bool `json:"read_only,omitempty" yaml:"read_only,omitempty"`
	Destructive *bool `json:"destructive,omitempty" yaml:"destructive,omitempty"`
	Idempotent  *bool `json:"idempotent,omitempty" yaml:"idempotent,omitempty"`
	OpenWorld   *bool `json:"open_world,omitempty" yaml:"open_world,omitempty"`
}

func (m HintMatch) conds() []*bool {
	return []*bool{m.ReadOnly, m.Destructive, m.Idempotent, m.OpenWorld}
}

// Error names the rule and field of a policy that is wrong.
type Error struct {
	Rule  int    // 1-based; 0 for the file itself
	Name  string // the rule's name, if it has one
	Line  int    // in the file, if known
	Field string
	Err   error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("policy: ")
	if e.Rule > 0 {
		fmt.Fprintf(&b, "rule %d", e.Rule)
		if e.Name != "" {
			fmt.Fprintf(&b, " %q", e.Name)
		}
		b.WriteString(": ")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// ErrPolicy is matched by every error of Parse and New.
var ErrPolicy = errors.New("invalid policy")

func (e *Error) Is(target error) bool { return target == ErrPolicy }

// Policy is a validated set of rules.
type Policy struct {
	file  File
	rules []*rule
}

// rule is a Rule compiled.
type rule struct {
	Rule
	paths    []PathGlob
	domains  []DomainPattern
	commands []command.Pattern
}

var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`) })

// fieldsOf lists the keys of a struct's YAML form, for refusing unknown ones.
var (
	fileFields = []string{"version", "rules"}
	ruleFields = []string{"name", "description", "decision", "tools", "servers", "effect", "paths", "domains",
		"commands", "data", "hints", "network", "every_time", "grantable", "show"}
	hintFields = []string{"read_only", "destructive", "idempotent", "open_world"}
	showValues = []string{"diff", "domain", "data", "command"}
)

// maxFile bounds a policy file.
const maxFile = 1 << 20

// Parse reads a policy file, YAML or JSON (JSON is YAML). It is strict: an unknown
// field, a repeated key, a wrong type or an invalid pattern is an *Error naming
// the rule, the line and the field.
func Parse(b []byte) (*Policy, error) {
	if len(b) > maxFile {
		return nil, &Error{Err: fmt.Errorf("%d bytes is more than a policy file may have (%d)", len(b), maxFile)}
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil {
		return nil, &Error{Err: fmt.Errorf("not YAML or JSON: %w", err)}
	}
	var extra yaml.Node
	if dec.Decode(&extra) == nil {
		return nil, &Error{Line: extra.Line, Err: errors.New("more than one document; a policy file holds one")}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, &Error{Err: errors.New("want a mapping with version and rules")}
	}
	top := doc.Content[0]
	if err := checkKeys(top, fileFields); err != nil {
		return nil, &Error{Line: err.line, Err: err}
	}
	var f File
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		switch k.Value {
		case "version":
			if err := v.Decode(&f.Version); err != nil {
				return nil, &Error{Line: v.Line, Field: "version", Err: errors.New("want a number")}
			}
		case "rules":
			if v.Kind != yaml.SequenceNode {
				return nil, &Error{Line: v.Line, Field: "rules", Err: errors.New("want a list of rules")}
			}
			for j, rn := range v.Content {
				r, err := decodeRule(rn)
				if err != nil {
					err.Rule = j + 1
					return nil, err
				}
				f.Rules = append(f.Rules, r)
			}
		}
	}
	return compile(f, func(i int) int { return lineOfRule(top, i) })
}

func lineOfRule(top *yaml.Node, i int) int {
	for j := 0; j+1 < len(top.Content); j += 2 {
		if top.Content[j].Value == "rules" && i < len(top.Content[j+1].Content) {
			return top.Content[j+1].Content[i].Line
		}
	}
	return 0
}

type keyError struct {
	line int
	msg  string
}

func (e *keyError) Error() string { return e.msg }

// checkKeys refuses a mapping with a key outside known or a key given twice.
func checkKeys(m *yaml.Node, known []string) *keyError {
	seen := map[string]int{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if prev, dup := seen[k.Value]; dup {
			return &keyError{k.Line, fmt.Sprintf("field %q is given twice (first on line %d)", k.Value, prev)}
		}
		seen[k.Value] = k.Line
		if !slices.Contains(known, k.Value) {
			return &keyError{k.Line, fmt.Sprintf("unknown field %q; the fields are: %s", k.Value, strings.Join(known, ", "))}
		}
	}
	return nil
}

func decodeRule(n *yaml.Node) (Rule, *Error) {
	var r Rule
	if n.Kind != yaml.MappingNode {
		return r, &Error{Line: n.Line, Err: errors.New("want a mapping")}
	}
	name := ""
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "name" {
			name = n.Content[i+1].Value
		}
	}
	if err := checkKeys(n, ruleFields); err != nil {
		return r, &Error{Name: name, Line: err.line, Err: err}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Value == "hints" && v.Kind == yaml.MappingNode {
			if err := checkKeys(v, hintFields); err != nil {
				return r, &Error{Name: name, Line: err.line, Field: "hints", Err: err}
			}
		}
		// Decode field by field, so that a wrong value names its field.
		one := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{k, v}}
		if err := one.Decode(&r); err != nil {
			return r, &Error{Name: name, Line: v.Line, Field: k.Value, Err: cleanYAMLError(err)}
		}
	}
	return r, nil
}

// cleanYAMLError drops yaml's "yaml: unmarshal errors:\n  line N: " wrapping.
func cleanYAMLError(err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg := te.Errors[0]
		if i := strings.Index(msg, ": "); strings.HasPrefix(msg, "line ") && i > 0 {
			msg = msg[i+2:]
		}
		return errors.New(msg)
	}
	return err
}

// New validates a policy given as a value (from an API request).
func New(f File) (*Policy, error) { return compile(f, func(int) int { return 0 }) }

func compile(f File, line func(int) int) (*Policy, error) {
	switch {
	case f.Version == 0:
		return nil, &Error{Field: "version", Err: fmt.Errorf("missing; a policy file begins with version: %d", Version)}
	case f.Version != Version:
		return nil, &Error{Field: "version", Err: fmt.Errorf("version %d is not one this agentbox reads (it reads %d)", f.Version, Version)}
	}
	p := &Policy{file: f}
	names := map[string]int{}
	for i, r := range f.Rules {
		bad := func(field string, err error) error {
			return &Error{Rule: i + 1, Name: r.Name, Line: line(i), Field: field, Err: err}
		}
		switch {
		case r.Name == "":
			return nil, bad("name", errors.New("missing; every rule has a name, which decisions cite"))
		case !nameRE().MatchString(r.Name):
			return nil, bad("name", fmt.Errorf("%q: want lowercase letters, digits, '.', '_' or '-', at most 64", r.Name))
		case names[r.Name] > 0:
			return nil, bad("name", fmt.Errorf("rule %d has the same name", names[r.Name]))
		case r.Decision == "":
			return nil, bad("decision", errors.New("missing; want allow, ask or deny"))
		case r.Decision.Rank() < 0:
			return nil, bad("decision", fmt.Errorf("unknown decision %q (want allow, ask or deny)", r.Decision))
		case r.EveryTime && r.Decision != Ask:
			return nil, bad("every_time", errors.New("only an ask rule can ask every time"))
		case r.Grantable && r.Decision != Deny:
			return nil, bad("grantable", errors.New("only a deny rule can be lifted by a grant"))
		}
		names[r.Name] = i + 1
		targets := 0
		for _, n := range []int{len(r.Paths), len(r.Domains), len(r.Commands)} {
			if n > 0 {
				targets++
			}
		}
		if targets > 1 {
			return nil, bad("paths, domains, commands", errors.New("a rule names one kind of target; split it into one rule per kind"))
		}
		c := &rule{Rule: r}
		for j, s := range r.Tools {
			if _, err := path.Match(s, ""); err != nil || s == "" {
				return nil, bad(fmt.Sprintf("tools[%d]", j), fmt.Errorf("%q is not a valid name pattern", s))
			}
		}
		for j, s := range r.Servers {
			if _, err := path.Match(s, ""); err != nil || s == "" {
				return nil, bad(fmt.Sprintf("servers[%d]", j), fmt.Errorf("%q is not a valid name pattern", s))
			}
		}
		for j, e := range r.Effect {
			if !slices.Contains(Effects, e) {
				return nil, bad(fmt.Sprintf("effect[%d]", j), fmt.Errorf("unknown effect %q", e))
			}
		}
		for j, d := range r.Data {
			if d.Rank() < 0 {
				return nil, bad(fmt.Sprintf("data[%d]", j), fmt.Errorf("unknown data class %q", d))
			}
		}
		for j, s := range r.Paths {
			g, err := ParsePathGlob(s)
			if err != nil {
				return nil, bad(fmt.Sprintf("paths[%d]", j), err)
			}
			c.paths = append(c.paths, g)
		}
		for j, s := range r.Domains {
			d, err := ParseDomainPattern(s)
			if err != nil {
				return nil, bad(fmt.Sprintf("domains[%d]", j), err)
			}
			c.domains = append(c.domains, d)
		}
		for j, s := range r.Commands {
			pat, err := command.ParsePattern(s)
			if err != nil {
				return nil, bad(fmt.Sprintf("commands[%d]", j), err)
			}
			c.commands = append(c.commands, pat)
		}
		for j, s := range r.Show {
			if !slices.Contains(showValues, s) {
				return nil, bad(fmt.Sprintf("show[%d]", j), fmt.Errorf("%q: want one of %s", s, strings.Join(showValues, ", ")))
			}
		}
		p.rules = append(p.rules, c)
	}
	return p, nil
}

// File returns the policy as written.
func (p *Policy) File() File { return p.file }

// MarshalYAML writes the policy as a file Parse reads back.
func (p *Policy) MarshalYAML() (any, error) { return p.file, nil }
