package eval

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/internal/api"
	"github.com/agentbox/agentbox/internal/config"
	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/eval/report"
	"github.com/agentbox/agentbox/internal/mcp"
	"github.com/agentbox/agentbox/internal/task"
)

// The files an external agent leaves in its attempt's directory.
const (
	agentStdoutFile = "agent.stdout"
	agentStderrFile = "agent.stderr"
)

// AgentFile is what an external agent is told about its attempt, as JSON in the
// file named by $AGENTBOX_AGENT_FILE. The same connection is in the environment
// variables AGENTBOX_URL, AGENTBOX_TOKEN, AGENTBOX_ENV_ID and AGENTBOX_MCP_URL.
type AgentFile struct {
	Task      string `json:"task"`
	Title     string `json:"title"`
	Attempt   int    `json:"attempt"`
	Statement string `json:"statement"`
	// URL is the environment API (docs/API.md) and MCPURL its MCP endpoint
	// (streamable HTTP); both take Token as a bearer token, which reaches this
	// one environment only (scopes exec, file:read, file:write, artifact:read:
	// it can neither create nor destroy environments).
	URL           string `json:"url"`
	MCPURL        string `json:"mcp_url"`
	Token         string `json:"token"`
	EnvironmentID string `json:"environment_id"`
	// Workspace is the task's code inside the environment; TestCommand the
	// public tests (argv, run from Workspace) and Env what to run commands with
	// (PATH and the task's variables): exec requests carry it, the environment
	// has no default of its own.
	Workspace      string   `json:"workspace"`
	TestCommand    []string `json:"test_command"`
	Env            []string `json:"env"`
	TimeoutSeconds float64  `json:"timeout_seconds"`
}

// agentScopes are what an external agent's token holds: everything an agent does
// in its environment, nothing that makes or ends one.
var agentScopes = []string{config.ScopeExec, config.ScopeFileRead, config.ScopeFileWrite, config.ScopeArtifactRead}

// runExternal runs o.AgentCmd on t in a fresh environment served to it alone, and
// returns the environment's diff once the agent's process has exited (or was
// killed at the wall budget). The environment is destroyed before it returns.
func (o *Options) runExternal(ctx context.Context, t *task.Task, n int, dir string, spec envSpec, a *report.Attempt) ([]byte, error) {
	// A tenant of its own: the token reaches only the environments of its
	// tenant, and this tenant has exactly one.
	owner := env.Owner{Tenant: "eval-" + rand.Text()[:12], Task: t.ID}
	info, err := o.Service.Create(ctx, env.CreateOptions{Owner: owner, Workspace: t.Repo, Template: t.Environment.TemplateName(), Limits: spec.limits,
		TTL: spec.wall + 5*time.Minute, Labels: spec.labels, Mounts: spec.mounts})
	if err != nil {
		return nil, fmt.Errorf("create the agent's environment: %w", err)
	}
	defer o.Service.Destroy(context.WithoutCancel(ctx), owner, info.ID)

	token := rand.Text()
	cfg := config.Local(token) // a literal configuration, then narrowed
	cfg.Tenants = map[string]config.Tenant{owner.Tenant: {WorkspaceRoots: []string{t.Repo}}}
	cfg.Tokens[0].Name, cfg.Tokens[0].Tenant, cfg.Tokens[0].Task, cfg.Tokens[0].Scopes = "agent", owner.Tenant, t.ID, agentScopes
	srv, err := api.New(api.Options{Config: cfg, Service: o.Service})
	if err != nil {
		return nil, err
	}
	mcp.Mount(srv, mcp.Options{Service: srv.Service(), Redactor: srv.Redactor()}, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the agent: %w", err)
	}
	// The API's own Shutdown destroys its tenants' environments: this server is
	// closed instead, and the diff taken after.
	ms := &agentHandler{next: srv.Handler(), token: token}
	hs := &http.Server{Handler: ms, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	defer ms.end()
	defer hs.Close()
	url := "http://" + ln.Addr().String()

	scratch, err := os.MkdirTemp("", "agentbox-agent-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	af := AgentFile{Task: t.ID, Title: t.Title, Attempt: n, Statement: t.Statement, URL: url, MCPURL: url + "/mcp",
		Token: token, EnvironmentID: info.ID, Workspace: "/workspace", TestCommand: t.PublicTestCommand,
		Env: spec.env, TimeoutSeconds: spec.wall.Seconds()}
	file := filepath.Join(scratch, "agent.json")
	if err := writeJSON(file, af); err != nil {
		return nil, err
	}

	code, walled, err := o.runAgentProcess(ctx, dir, spec.wall, append(slices.Clip(o.AgentEnv),
		"AGENTBOX_AGENT_FILE="+file, "AGENTBOX_URL="+url, "AGENTBOX_TOKEN="+token,
		"AGENTBOX_ENV_ID="+info.ID, "AGENTBOX_MCP_URL="+url+"/mcp"))
	if err != nil {
		return nil, err
	}
	ms.close(hs) // nothing the agent left behind acts on the environment any more
	// Whatever model the agent called, agentbox did not see it: its cost is unknown.
	a.AgentExitCode, a.ToolCalls, a.CostUnknown = &code, ms.requests(), true
	switch {
	case ctx.Err() != nil:
		a.StopReason = "cancelled"
	case walled:
		a.StopReason = "budget_exhausted"
	case code == 0:
		a.StopReason = "done"
	default:
		a.StopReason = "agent_error"
	}
	patch, err := o.Service.Diff(context.WithoutCancel(ctx), owner, info.ID)
	if err != nil {
		return nil, fmt.Errorf("diff: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, patchFile), patch, 0o644); err != nil {
		return nil, err
	}
	return patch, nil
}

// runAgentProcess runs o.AgentCmd in its own process group, from the run's
// working directory (so that `python3 my_agent.py` means the user's file), its
// output in dir, and returns its exit code (-1 for a signal), and walled when it was
// killed at the wall budget. The whole group is killed when it ends, so nothing
// it started outlives the attempt.
func (o *Options) runAgentProcess(ctx context.Context, dir string, wall time.Duration, environ []string) (code int, walled bool, err error) {
	stdout, err := os.Create(filepath.Join(dir, agentStdoutFile))
	if err != nil {
		return 0, false, err
	}
	defer stdout.Close()
	stderr, err := os.Create(filepath.Join(dir, agentStderrFile))
	if err != nil {
		return 0, false, err
	}
	defer stderr.Close()
	wctx, cancel := context.WithTimeout(ctx, wall)
	defer cancel()
	cmd := exec.CommandContext(wctx, o.AgentCmd[0], o.AgentCmd[1:]...)
	cmd.Env, cmd.Stdout, cmd.Stderr = environ, stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Start(); err != nil {
		return 0, false, fmt.Errorf("start the agent (%s): %w", o.AgentCmd[0], err)
	}
	err = cmd.Wait()
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // its children, if any are left
	walled = errors.Is(wctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	if walled {
		fmt.Fprintf(stderr, "\nagentbox: the agent was killed at its wall budget of %s\n", wall)
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, walled, nil
	case errors.As(err, &ee):
		return ee.ExitCode(), walled, nil
	}
	return 0, walled, fmt.Errorf("run the agent: %w", err)
}

// agentHandler serves the external agent's requests (next): it counts them, can
// be closed (close), and remembers the MCP sessions opened, so that end can end
// them: a session outlives its connections (until its idle timeout), and an
// attempt's must not outlive the attempt.
type agentHandler struct {
	next     http.Handler
	token    string
	mu       sync.Mutex
	ids      []string
	n        int  // requests served: the agent's tool calls
	closed   bool // no request is served any more
	inflight sync.WaitGroup
}

func (m *agentHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		http.Error(w, "the attempt is over", http.StatusServiceUnavailable)
		return
	}
	m.n++
	m.inflight.Add(1)
	m.mu.Unlock()
	defer m.inflight.Done()
	m.next.ServeHTTP(w, r)
	if id := w.Header().Get("Mcp-Session-Id"); id != "" && r.URL.Path == "/mcp" {
		m.mu.Lock()
		if !slices.Contains(m.ids, id) {
			m.ids = append(m.ids, id)
		}
		m.mu.Unlock()
	}
}

// close refuses further requests, closes hs (which cancels the requests in
// flight) and waits for their handlers to return: after it, nothing a request
// started can still change the environment.
func (m *agentHandler) close(hs *http.Server) {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	hs.Close()
	m.inflight.Wait()
}

func (m *agentHandler) requests() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n
}

// end closes every session, as a client's DELETE /mcp would.
func (m *agentHandler) end() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range m.ids {
		r, _ := http.NewRequest(http.MethodDelete, "/mcp", nil)
		r.Header.Set("Authorization", "Bearer "+m.token)
		r.Header.Set("Mcp-Session-Id", id)
		m.next.ServeHTTP(discard{http.Header{}}, r)
	}
	m.ids = nil
}

type discard struct{ h http.Header }

func (d discard) Header() http.Header       { return d.h }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}
