package tool

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// probe is a tool that records which of its checks ran.
type probe struct {
	pre, handler int
	refuse       bool
	fail         error
	panicWith    any
}

func (p *probe) spec() Spec {
	return Spec{
		Name: "probe.run", Description: "a probe", Scope: "probe", Effect: EffectExec,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","minimum":0}},"required":["n"],"additionalProperties":false}`),
		Cost:        Cost{USD: 0.5},
		Precondition: func(context.Context, json.RawMessage) error {
			p.pre++
			if p.refuse {
				return errors.New("not now")
			}
			return nil
		},
		Handler: func(_ context.Context, args json.RawMessage) (Result, error) {
			p.handler++
			if p.panicWith != nil {
				panic(p.panicWith)
			}
			if p.fail != nil {
				return Result{}, p.fail
			}
			return Result{Data: map[string]any{"echo": json.RawMessage(args)}, Text: "hello"}, nil
		},
	}
}

// TestCallOrder checks scope → schema → precondition → charge → handler: each
// check that fails stops the ones after it, and what it returns is the envelope.
func TestCallOrder(t *testing.T) {
	for _, tc := range []struct {
		name        string
		scopes      []string
		tool        string
		args        string
		refuse      bool
		chargeErr   error
		fail        error
		panicWith   any
		code        Code
		pre, called int
		charged     int
	}{
		{name: "ok", scopes: []string{"probe"}, args: `{"n":1}`, pre: 1, called: 1, charged: 1},
		{name: "scope before schema", scopes: []string{"other"}, args: `{"n":"bad"}`, code: EPERM},
		{name: "unknown tool", scopes: []string{"probe"}, tool: "nope", args: `{}`, code: ENOTOOL},
		{name: "schema before precondition", scopes: []string{"probe"}, args: `{"n":-1}`, refuse: true, code: EINVAL},
		{name: "extra property", scopes: []string{"probe"}, args: `{"n":1,"x":2}`, code: EINVAL},
		{name: "not an object", scopes: []string{"probe"}, args: `[1]`, code: EINVAL},
		{name: "not json", scopes: []string{"probe"}, args: `{"n":`, code: EINVAL},
		{name: "precondition before charge", scopes: []string{"probe"}, args: `{"n":1}`, refuse: true, code: EPRECONDITION, pre: 1},
		{name: "charge before handler", scopes: []string{"probe"}, args: `{"n":1}`, chargeErr: errors.New("broke"), code: EBUDGET, pre: 1, charged: 1},
		{name: "handler error mapped", scopes: []string{"probe"}, args: `{"n":1}`, fail: Errorf(ENOMATCH, false, ActReread, "no"), code: ENOMATCH, pre: 1, called: 1, charged: 1},
		{name: "unknown error hidden", scopes: []string{"probe"}, args: `{"n":1}`, fail: errors.New("/host/secret/path broke"), code: EINTERNAL, pre: 1, called: 1, charged: 1},
		{name: "panic contained", scopes: []string{"probe"}, args: `{"n":1}`, panicWith: "boom at /host/path", code: EINTERNAL, pre: 1, called: 1, charged: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &probe{refuse: tc.refuse, fail: tc.fail, panicWith: tc.panicWith}
			at := time.Date(2026, 10, 19, 1, 43, 46, 0, time.UTC)
			r := NewRegistry(Options{Scopes: tc.scopes, Clock: func() time.Time { return at }})
			if err := r.Register(p.spec()); err != nil {
				t.Fatal(err)
			}
			name := tc.tool
			if name == "" {
				name = "probe.run"
			}
			charged := 0
			out := r.Call(context.Background(), Call{ID: "c1", Tool: name, Args: json.RawMessage(tc.args)}, func(c Cost) error {
				charged++
				if c.USD != 0.5 {
					t.Errorf("charged %v", c)
				}
				return tc.chargeErr
			})
			e := out.Envelope
			if tc.code == "" {
				if !e.OK || e.Error != nil || e.Text != "hello" || !strings.Contains(string(e.Data), `"echo":{"n":1}`) || e.Cost.USD != 0.5 {
					t.Fatalf("envelope %+v", e)
				}
			} else {
				if e.OK || e.Error == nil || e.Error.Code != tc.code || string(e.Data) != "null" {
					t.Fatalf("envelope %+v error %+v, want %s", e, e.Error, tc.code)
				}
				if e.Error.SuggestedAction == "" || e.Error.Message == "" {
					t.Errorf("error without message or suggested action: %+v", e.Error)
				}
				if strings.Contains(e.Error.Message, "/host") {
					t.Errorf("message leaks internal detail: %q", e.Error.Message)
				}
			}
			if !e.ObservedAt.Equal(at) || e.Refs == nil {
				t.Errorf("observed_at %v refs %v", e.ObservedAt, e.Refs)
			}
			if p.pre != tc.pre || p.handler != tc.called || charged != tc.charged {
				t.Errorf("precondition %d handler %d charge %d, want %d %d %d", p.pre, p.handler, charged, tc.pre, tc.called, tc.charged)
			}
			if tc.panicWith != nil && !strings.Contains(out.Internal, "boom") {
				t.Errorf("panic not kept for the operator: %q", out.Internal)
			}
		})
	}
}

func TestRegisterRejects(t *testing.T) {
	ok := (&probe{}).spec()
	for _, tc := range []struct {
		name string
		edit func(*Spec)
	}{
		{"bad name", func(s *Spec) { s.Name = "fs read" }},
		{"long name", func(s *Spec) { s.Name = strings.Repeat("a", 65) }},
		{"no scope", func(s *Spec) { s.Scope = "" }},
		{"no handler", func(s *Spec) { s.Handler = nil }},
		{"unknown effect", func(s *Spec) { s.Effect = "teleport" }},
		{"schema not object", func(s *Spec) { s.InputSchema = json.RawMessage(`{"type":"string"}`) }},
		{"schema not json", func(s *Spec) { s.InputSchema = json.RawMessage(`{`) }},
		{"output schema bad", func(s *Spec) { s.OutputSchema = json.RawMessage(`{"type":"array"}`) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ok
			tc.edit(&s)
			if err := NewRegistry(Options{}).Register(s); !errors.Is(err, ErrRegister) {
				t.Fatalf("err = %v", err)
			}
		})
	}
	r := NewRegistry(Options{})
	if err := r.Register(ok); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(ok); !errors.Is(err, ErrRegister) {
		t.Fatalf("duplicate: %v", err)
	}
}

// TestDefs checks that only granted tools are offered, in the MCP shape.
func TestDefs(t *testing.T) {
	r := NewRegistry(Options{Scopes: []string{"a"}})
	h := func(context.Context, json.RawMessage) (Result, error) { return Result{}, nil }
	for _, s := range []Spec{
		{Name: "x.read", Scope: "a", Effect: EffectRead, Idempotent: true, Handler: h, OutputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "y.write", Scope: "b", Effect: EffectWrite, Handler: h},
	} {
		if err := r.Register(s); err != nil {
			t.Fatal(err)
		}
	}
	defs := r.Defs()
	if len(defs) != 1 || defs[0].Name != "x.read" {
		t.Fatalf("defs %+v", defs)
	}
	b, _ := json.Marshal(defs[0])
	var m map[string]any
	json.Unmarshal(b, &m)
	for _, k := range []string{"name", "inputSchema", "outputSchema", "annotations"} {
		if _, ok := m[k]; !ok {
			t.Errorf("MCP field %q missing from %s", k, b)
		}
	}
	ann := m["annotations"].(map[string]any)
	if ann["readOnlyHint"] != true || ann["destructiveHint"] != false || ann["openWorldHint"] != false {
		t.Errorf("annotations %v", ann)
	}
}

// TestFromMCP registers a tool as an MCP server lists it and calls it.
func TestFromMCP(t *testing.T) {
	listed := `{"name":"weather_get","description":"Get the weather","inputSchema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},
		"annotations":{"readOnlyHint":true}}`
	var d Def
	if err := json.Unmarshal([]byte(listed), &d); err != nil {
		t.Fatal(err)
	}
	var got json.RawMessage
	s := FromMCP(d, "mcp:weather", func(_ context.Context, args json.RawMessage) (Result, error) {
		got = args
		return Result{Data: map[string]string{"sky": "clear"}}, nil
	})
	if s.Effect != EffectNetwork {
		t.Errorf("read-only but open-world (the MCP default) must count as network, got %s", s.Effect)
	}
	r := NewRegistry(Options{Scopes: []string{"mcp:weather"}})
	if err := r.Register(s); err != nil {
		t.Fatal(err)
	}
	if out := r.Call(context.Background(), Call{Tool: "weather_get", Args: json.RawMessage(`{}`)}, nil); out.Envelope.Error.Code != EINVAL {
		t.Fatalf("missing required city: %+v", out.Envelope)
	}
	out := r.Call(context.Background(), Call{Tool: "weather_get", Args: json.RawMessage(`{"city":"Oslo"}`)}, nil)
	if !out.Envelope.OK || string(got) != `{"city":"Oslo"}` {
		t.Fatalf("%+v %s", out.Envelope, got)
	}

	tr, fa := true, false
	for _, tc := range []struct {
		a    *Annotations
		want Effect
	}{
		{nil, EffectNetwork},
		{&Annotations{OpenWorldHint: &fa}, EffectWrite},
		{&Annotations{OpenWorldHint: &fa, ReadOnlyHint: &tr}, EffectRead},
		{&Annotations{OpenWorldHint: &tr, ReadOnlyHint: &tr}, EffectNetwork},
	} {
		if got := FromMCP(Def{Name: "t", Annotations: tc.a}, "s", nil).Effect; got != tc.want {
			t.Errorf("%+v: effect %s, want %s", tc.a, got, tc.want)
		}
	}
}

// TestEnvelopeShape pins the JSON of a failure to seed 002's example.
func TestEnvelopeShape(t *testing.T) {
	at := time.Date(2026, 10, 19, 1, 43, 46, 852e6, time.UTC)
	e := failure(Errorf(EPERM, false, ActStop, "parent traversal not allowed: '../secret.txt'"), at)
	b, _ := json.Marshal(e)
	want := `{"ok":false,"data":null,"error":{"code":"EPERM","message":"parent traversal not allowed: '../secret.txt'","retryable":false,"suggested_action":"stop"},"refs":[],"cost":{},"observed_at":"2026-10-19T01:43:46.852Z"}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}

func TestRender(t *testing.T) {
	e := Envelope{OK: true, Data: json.RawMessage(`{"path":"a.py"}`), Text: "print(\"hi\")\n", Refs: []Ref{}, Truncated: true}
	got := Render(e)
	want := `{"ok":true,"data":{"path":"a.py"},"truncated":true}` + "\n\nprint(\"hi\")\n"
	if got != want {
		t.Fatalf("got %q", got)
	}
	f := failure(Errorf(ENOENT, false, ActListDir, "x: not found"), time.Time{})
	if got := Render(f); got != `{"ok":false,"error":{"code":"ENOENT","message":"x: not found","retryable":false,"suggested_action":"list_dir"}}` {
		t.Fatalf("got %q", got)
	}
}

// FuzzCall feeds arbitrary argument bytes through the registry: it must never
// panic, and must answer with exactly one of ok and error.
func FuzzCall(f *testing.F) {
	for _, s := range []string{`{"n":1}`, `{"n":-1}`, `[]`, `"x"`, `{"n":1e400}`, `{"n":null}`, "\xff", `{"n":1,"n":2}`, ``} {
		f.Add([]byte(s))
	}
	p := &probe{}
	r := NewRegistry(Options{Scopes: []string{"probe"}})
	if err := r.Register(p.spec()); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		out := r.Call(context.Background(), Call{Tool: "probe.run", Args: args}, nil)
		e := out.Envelope
		if e.OK == (e.Error != nil) {
			t.Fatalf("ok=%v error=%v", e.OK, e.Error)
		}
		if e.OK {
			var v struct {
				Echo struct {
					N *float64 `json:"n"`
				} `json:"echo"`
			}
			if err := json.Unmarshal(e.Data, &v); err != nil || v.Echo.N == nil || *v.Echo.N < 0 {
				t.Fatalf("accepted %q: %s", args, e.Data)
			}
		}
	})
}
