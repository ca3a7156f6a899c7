package policy

import (
	"errors"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		name, file string
		want       []string // substrings of the error
	}{
		{"no version", "rules: []", []string{"version", "missing"}},
		{"future version", "version: 2\nrules: []", []string{"version 2"}},
		{"not a mapping", "- a\n- b", []string{"want a mapping"}},
		{"two documents", "version: 1\n---\nversion: 1", []string{"more than one document"}},
		{"unknown top field", "version: 1\nrulez: []", []string{`unknown field "rulez"`, "line 2"}},
		{"unknown rule field", "version: 1\nrules:\n- name: a\n  decision: allow\n  pathz: [x]", []string{`rule 1 "a"`, `unknown field "pathz"`, "line 5"}},
		{"duplicate key", "version: 1\nrules:\n- name: a\n  decision: allow\n  decision: deny", []string{`rule 1 "a"`, `"decision" is given twice`}},
		{"unknown hint", "version: 1\nrules:\n- name: a\n  decision: ask\n  hints: {readonly: true}", []string{`rule 1 "a"`, "hints", `unknown field "readonly"`}},
		{"bad decision", "version: 1\nrules:\n- name: a\n  decision: maybe", []string{`rule 1 "a"`, "decision", `"maybe"`}},
		{"missing decision", "version: 1\nrules:\n- name: a", []string{`rule 1 "a"`, "decision: missing"}},
		{"missing name", "version: 1\nrules:\n- decision: allow", []string{"rule 1", "name: missing"}},
		{"bad name", "version: 1\nrules:\n- name: Read All\n  decision: allow", []string{"name", `"Read All"`}},
		{"same name", "version: 1\nrules:\n- {name: a, decision: allow}\n- {name: a, decision: deny}", []string{`rule 2 "a"`, "rule 1 has the same name"}},
		{"bad effect", "version: 1\nrules:\n- {name: a, decision: allow, effect: [reed]}", []string{`rule 1 "a"`, "effect", `"reed"`}},
		{"bad class", "version: 1\nrules:\n- {name: a, decision: allow, data: [private]}", []string{`rule 1 "a"`, "data", `"private"`}},
		{"bad glob", "version: 1\nrules:\n- {name: a, decision: allow, paths: ['src/[']}", []string{`rule 1 "a"`, "paths[0]", "src/["}},
		{"dotdot glob", "version: 1\nrules:\n- {name: a, decision: allow, paths: ['../x']}", []string{"paths[0]", ".."}},
		{"bad domain", "version: 1\nrules:\n- {name: a, decision: deny, domains: [ok.example, '*.com']}", []string{`rule 1 "a"`, "domains[1]", "public suffix"}},
		{"ip domain", "version: 1\nrules:\n- {name: a, decision: deny, domains: ['10.0.0.1']}", []string{"domains[0]"}},
		{"bad preset", "version: 1\nrules:\n- {name: a, decision: deny, domains: ['preset:nope']}", []string{"domains[0]", "no preset"}},
		{"bad command", "version: 1\nrules:\n- {name: a, decision: deny, commands: ['** push']}", []string{`rule 1 "a"`, "commands[0]"}},
		{"two targets", "version: 1\nrules:\n- {name: a, decision: deny, paths: [x], commands: [y]}", []string{"one kind of target"}},
		{"every_time on allow", "version: 1\nrules:\n- {name: a, decision: allow, every_time: true}", []string{"every_time", "only an ask rule"}},
		{"grantable on ask", "version: 1\nrules:\n- {name: a, decision: ask, grantable: true}", []string{"grantable", "only a deny rule"}},
		{"bad show", "version: 1\nrules:\n- {name: a, decision: ask, show: [everything]}", []string{"show[0]", `"everything"`}},
		{"wrong type", "version: 1\nrules:\n- {name: a, decision: ask, every_time: often}", []string{`rule 1 "a"`, "every_time"}},
		{"rules not a list", "version: 1\nrules: {a: b}", []string{"rules", "want a list"}},
		{"json unknown field", `{"version": 1, "rules": [{"name": "a", "decision": "allow", "tool": "x"}]}`, []string{`rule 1 "a"`, `unknown field "tool"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.file))
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, ErrPolicy) {
				t.Errorf("error %v is not ErrPolicy", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestParseYAMLAndJSONAgree(t *testing.T) {
	y := `version: 1
rules:
  - name: tests
    decision: allow
    effect: [exec]
    commands: ["go test **"]
  - name: no-exfil
    decision: deny
    domains: ["*.evil.example", "preset:npm"]
    hints: {open_world: true}
`
	j := `{"version":1,"rules":[{"name":"tests","decision":"allow","effect":["exec"],"commands":["go test **"]},
	{"name":"no-exfil","decision":"deny","domains":["*.evil.example","preset:npm"],"hints":{"open_world":true}}]}`
	py, err := Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	pj, err := Parse([]byte(j))
	if err != nil {
		t.Fatal(err)
	}
	by, _ := yaml.Marshal(py.File())
	bj, _ := yaml.Marshal(pj.File())
	if string(by) != string(bj) {
		t.Fatalf("YAML and JSON differ:\n%s\n%s", by, bj)
	}
}

func TestDefaultPolicy(t *testing.T) {
	p, err := Parse(DefaultText())
	if err != nil {
		t.Fatal(err)
	}
	if len(p.rules) < 10 {
		t.Fatalf("the default policy has %d rules", len(p.rules))
	}
	for _, tr := range traits {
		found := false
		for _, r := range p.rules {
			found = found || r.Name == tr.rule && len(r.commands) > 0
		}
		if !found {
			t.Errorf("trait %s has no rule with commands in the default policy", tr.rule)
		}
	}
	// It round-trips through its own File.
	b, err := yaml.Marshal(p.File())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(b); err != nil {
		t.Fatalf("the default policy does not read back: %v\n%s", err, b)
	}
}

// FuzzParse: any input is refused with an *Error or parsed into a policy that
// writes out and reads back the same.
func FuzzParse(f *testing.F) {
	f.Add(string(DefaultText()))
	f.Add("version: 1\nrules:\n- {name: a, decision: deny, domains: ['*.x.example:443'], hints: {destructive: true}}")
	f.Add(`{"version":1,"rules":[{"name":"a","decision":"ask","every_time":true,"commands":["git push **"]}]}`)
	f.Add("version: 1\nrules:\n- name: a\n  decision: allow\n  paths: ['src/**', '{a,b}/*.go']\n  data: [project]\n  network: false")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse([]byte(s))
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not an *Error", err)
			}
			return
		}
		b, err := yaml.Marshal(p.File())
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		q, err := Parse(b)
		if err != nil {
			t.Fatalf("%q parsed, but its output %q does not: %v", s, b, err)
		}
		b2, _ := yaml.Marshal(q.File())
		if string(b) != string(b2) {
			t.Fatalf("not stable:\n%s\n%s", b, b2)
		}
	})
}
