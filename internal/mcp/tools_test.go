package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/runner"
	"github.com/agentbox/agentbox/internal/wire"
	"github.com/agentbox/agentbox/internal/workspace"
)

// stubService is a test double for the edge: it answers the few calls these tests
// make and panics (through the nil embedded interface) on any other.
type stubService struct{ env.Service }

func (stubService) Get(_ context.Context, _ env.Owner, id string) (env.Info, error) {
	if id != "e1" {
		return env.Info{}, fmt.Errorf("env %s of tenant zz: %w", id, env.ErrNotFound)
	}
	return env.Info{ID: "e1", Owner: env.Owner{Tenant: "t"}, State: "running"}, nil
}

func (stubService) ReadFile(_ context.Context, _ env.Owner, id, path string, off, n int64) ([]byte, error) {
	switch path {
	case "bin":
		return []byte{0xff, 0xfe, 0}, nil
	case "big":
		return nil, &workspace.TooLargeError{Path: "big", Size: 9 << 20, Limit: 8 << 20}
	case "host":
		return nil, fmt.Errorf("open /var/lib/agentbox/envs/e1/upper/host: %w", env.ErrInvalid)
	}
	return []byte("text"), nil
}

func (stubService) Exec(_ context.Context, _ env.Owner, id string, r env.ExecRequest) (*runner.Result, error) {
	return &runner.Result{ExitCode: 3, Stdout: strings.Join(r.Argv, " "), Limit: runner.LimitTimeout, TimedOut: true}, nil
}

func session(t *testing.T, d Options) *sdk.ClientSession {
	t.Helper()
	ct, st := sdk.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := NewServer(d).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestToolAnnotations: every tool has input and output schemas (objects) and the
// annotations this table holds; none is open-world.
func TestToolAnnotations(t *testing.T) {
	cs := session(t, Options{Service: wire.New(stubService{}), Templates: stubTemplates{}})
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// readOnly, destructive, idempotent
	want := map[string][3]bool{
		"env_create": {false, false, false}, "env_get": {true, false, true}, "env_list": {true, false, true},
		"env_destroy": {false, true, true}, "env_snapshot": {false, true, false}, "env_fork": {false, true, false}, "env_pause": {false, false, true}, "env_resume": {false, false, true}, "env_network_set": {false, true, true}, "env_network_log": {true, false, true},
		"exec": {false, true, false}, "exec_start": {false, true, false}, "exec_wait": {true, false, true},
		"exec_output": {true, false, true}, "exec_stdin": {false, false, false}, "exec_signal": {false, true, false},
		"file_read": {true, false, true}, "file_write": {false, true, true}, "file_list": {true, false, true},
		"file_stat": {true, false, true}, "file_remove": {false, true, true}, "file_mkdir": {false, false, true},
		"files_download": {true, false, true}, "files_upload": {false, true, true},
		"patch_apply": {false, true, false}, "str_replace": {false, true, false}, "diff": {true, false, true},
		"artifact_export": {false, false, true}, "artifact_read": {true, false, true},
		"template_list": {true, false, true}, "template_inspect": {true, false, true},
	}
	if len(res.Tools) != len(want) {
		t.Errorf("%d tools, want %d", len(res.Tools), len(want))
	}
	for _, tool := range res.Tools {
		w, ok := want[tool.Name]
		if !ok {
			t.Errorf("unexpected tool %s", tool.Name)
			continue
		}
		a := tool.Annotations
		if a == nil || a.ReadOnlyHint != w[0] || a.DestructiveHint == nil || *a.DestructiveHint != w[1] ||
			a.IdempotentHint != w[2] || a.OpenWorldHint == nil || *a.OpenWorldHint || a.Title == "" {
			t.Errorf("%s: annotations %+v, want readOnly=%v destructive=%v idempotent=%v openWorld=false", tool.Name, a, w[0], w[1], w[2])
		}
		for what, s := range map[string]any{"input": tool.InputSchema, "output": tool.OutputSchema} {
			b, _ := json.Marshal(s)
			var m struct{ Type string }
			if json.Unmarshal(b, &m); m.Type != "object" {
				t.Errorf("%s: %s schema %s", tool.Name, what, b)
			}
		}
		if tool.Description == "" {
			t.Errorf("%s: no description", tool.Name)
		}
	}
}

// TestToolErrors: failures are tool errors (isError) whose text is the API's
// envelope, with the same codes and the same no-enumeration and no-host-path rules.
func TestToolErrors(t *testing.T) {
	var denied []string
	cs := session(t, Options{Service: wire.New(stubService{}), Redactor: wire.NewRedactor("/var/lib/agentbox"),
		Denied: func(_, c string) { denied = append(denied, c) }})
	for _, tc := range []struct {
		tool string
		args map[string]any
		code string
		msg  string
	}{
		{"env_get", map[string]any{"id": "nope"}, "ENOENT", `environment "nope" not found`},
		{"file_read", map[string]any{"id": "e1", "path": "big"}, "EFBIG", "big: 9437184 bytes exceeds"},
		{"file_read", map[string]any{"id": "e1", "path": "host"}, "EINVAL", "open <host>/envs/e1/upper/host: invalid request"},
		{"exec", map[string]any{"id": "e1", "argv": []string{}}, "EINVAL", "give argv"},
		{"exec", map[string]any{"id": "e1"}, "EINVAL", "give argv"},
		{"exec_start", map[string]any{"id": "e1", "argv": []string{"ls"}, "command": "ls"}, "EINVAL", "not both"},
		{"file_write", map[string]any{"id": "e1", "path": "x", "content": "%%%", "encoding": "base64"}, "EINVAL", "not valid base64"},
	} {
		t.Run(tc.tool+" "+tc.code, func(t *testing.T) {
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError {
				t.Fatalf("not a tool error: %+v", res)
			}
			var e client.Envelope
			text := res.Content[0].(*sdk.TextContent).Text
			if err := json.Unmarshal([]byte(text), &e); err != nil || e.Error == nil {
				t.Fatalf("not an envelope: %s", text)
			}
			if e.Error.Code != tc.code || !strings.Contains(e.Error.Message, tc.msg) {
				t.Fatalf("got %+v, want %s %q", e.Error, tc.code, tc.msg)
			}
		})
	}
	// A schema violation is refused by the SDK before the handler runs.
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "exec", Arguments: map[string]any{"id": "e1", "argv": "ls"}})
	if err != nil || !res.IsError {
		t.Fatalf("argv as a string accepted: %v %+v", err, res)
	}
	if len(denied) != 7 {
		t.Fatalf("denial hook saw %v", denied)
	}
}

func TestToolResults(t *testing.T) {
	cs := session(t, Options{Service: wire.New(stubService{})})
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "file_read", Arguments: map[string]any{"id": "e1", "path": "bin"}})
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if string(b) != `{"bytes":3,"content":"//4A","encoding":"base64"}` {
		t.Fatalf("binary file read as %s", b)
	}
	// A command that fails is a result, not a tool error.
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "exec", Arguments: map[string]any{"id": "e1", "argv": []string{"x"}}})
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	var r client.Result
	b, _ = json.Marshal(res.StructuredContent)
	if json.Unmarshal(b, &r); r.ExitCode != 3 || r.Limit != "timeout" || !r.TimedOut || r.Stdout != "x" {
		t.Fatalf("result %s", b)
	}
	// command is a shell command line: the service gets sh -c and the line whole
	// (for MCP Inspector's CLI, which cannot pass an array).
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "exec", Arguments: map[string]any{"id": "e1", "command": "echo a | wc -c"}})
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	b, _ = json.Marshal(res.StructuredContent)
	if json.Unmarshal(b, &r); r.Stdout != "sh -c echo a | wc -c" {
		t.Fatalf("command ran as %q", r.Stdout)
	}
}

type stubTemplates struct{}

func (stubTemplates) List(context.Context) ([]client.Template, error) { return nil, nil }
func (stubTemplates) Inspect(context.Context, string) (client.TemplateInfo, error) {
	return client.TemplateInfo{}, nil
}
