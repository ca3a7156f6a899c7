package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentbox/agentbox/internal/agent"
	"github.com/agentbox/agentbox/internal/config"
	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/grant"
	"github.com/agentbox/agentbox/internal/journal"
	"github.com/agentbox/agentbox/internal/model"
	"github.com/agentbox/agentbox/internal/runner"
	"github.com/agentbox/agentbox/internal/terminal"
	"github.com/agentbox/agentbox/internal/tool"
	"github.com/agentbox/agentbox/internal/trace"
)

type agentOptions struct {
	workspace, goal, goalFile string
	policy, mode, via         string
	model, baseURL            string
	stream                    bool
	apiKeyFile                string
	pricesFile                string
	priceIn, priceOut         float64
	limits                    agent.Limits
	testCmd                   string
	tracePath, eventsPath     string
	diffOut                   string
	json                      bool
	isolation                 runner.Isolation // of its environment
	net                       networkFlags
	perm                      permissionOptions
	// session is the directory of a durable session's journal (--session, or
	// resume's argument); resume continues the session it holds.
	session string
	resume  bool
	// approvalWait is how long a durable session waits for an answer to an
	// approval request before it stops (0: it pauses at once).
	approvalWait time.Duration
	delegate     bool
	ledger       string
}

func agentCmd() *cobra.Command {
	o := &agentOptions{}
	cmd := &cobra.Command{
		Use:   "agent --workspace DIR --goal TEXT [flags]",
		Short: "Run one agent session in a fresh sandboxed environment",
		Long: `Agent creates an environment from --workspace (a copy-on-write view of it: the
directory itself is never modified), runs one session of the chosen policy in it
with the built-in tools (fs.read, fs.list, fs.search, fs.write, fs.remove,
patch.apply, exec.run, test.run, task.finish, artifact.read), and prints the stop
reason, steps, tool calls and cost. It writes the step trace (--trace), the event log (--events)
and the final diff (--diff-out, else printed after the summary), then destroys the
environment. No daemon is involved. The environment has no network unless
--allow-host gives it one (as for agentbox run, --secret included); then every
connection is a NetworkAccess event in --events, after the tool call during which
it ended.

Policies: scripted (seed 002's modes for the calc task: --mode good, loop or
escape; --mode exfil is seed 004's combined attack, obeying the workspace's
ISSUE.md as an injected model would), openai (Chat Completions against --base-url, default OpenAI's; any
compatible server: vLLM, llama.cpp, Ollama, OpenRouter) and anthropic (Messages).
The API key comes from --api-key-file, else OPENAI_API_KEY or ANTHROPIC_API_KEY;
it is sent to the model endpoint only, never to the sandbox, and scrubbed from the
trace. --max-cost needs the model's price (--price-in/--price-out or --prices).

Every tool call is decided by the permission policy (--permissions, default the
built-in one: agentbox policy default): allowed, asked, or refused. Asks are
answered by --approvals FILE, else at the terminal when stdin is one; with
neither, or an entry missing, the session stops with policy_stop naming the
request (an approvals file saying unanswered: deny refuses it and goes on, as
agentbox eval does by default). --grant gives capabilities from the start;
--allow-net HOST offers the http.fetch tool, through an egress proxy that
reaches only those hosts.

With --session DIR the session is durable: each event is committed to DIR's
journal before anything acts on it, and after a crash agentbox resume DIR continues
it (see agentbox resume --help). Its asks (without --approvals) are answered with
agentbox sessions approve|deny DIR REQUEST: the session pauses (exit 1, stop reason
paused; agentbox resume DIR continues the held call once answered), or with
--approval-wait D waits up to D for the answer and then stops with policy_stop. --mode long is the crash campaign's session:
dozens of writes, reads, patches and test runs and one ledger.append (--ledger
FILE, an effect outside the sandbox). AGENTBOX_CRASH_AT=POINT[,POINT] kills the
process at a crash point (seq:N, effect-before:N, effect-after:N, process-started:N, reattached:N, rollback-after:N, compact:N, snapshot:N) to
test recovery.

Exit status: 0 when the task was finished (stop reason done), 1 for any other stop
reason (paused included), 125 when the session could not run.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return agentMain(cmd.Context(), o, sessionArgs(cmd.Flags()))
		},
	}
	agentFlags(cmd.Flags(), o)
	return cmd
}

// agentFlags defines agent's flags; resume parses a session's recorded ones
// with them.
func agentFlags(f *pflag.FlagSet, o *agentOptions) {
	f.StringVar(&o.workspace, "workspace", "", "host directory the environment starts from (required)")
	f.StringVar(&o.goal, "goal", "", "what the agent is asked to do")
	f.StringVar(&o.goalFile, "goal-file", "", "read the goal from this file instead")
	f.StringVar(&o.policy, "policy", "scripted", "scripted, openai or anthropic")
	f.StringVar(&o.mode, "mode", agent.ModeGood, "scripted mode: good, loop, escape, exfil or long")
	f.StringVar(&o.ledger, "ledger", "", "offer ledger.append, appending to this host file: an effect outside the sandbox that is neither checkable nor idempotent (--mode long calls it once)")
	f.StringVar(&o.session, "session", "", "keep the session's journal in this directory: the session survives a crash (agentbox resume DIR)")
	f.DurationVar(&o.approvalWait, "approval-wait", 0, "with --session: how long to wait for agentbox sessions approve|deny before stopping with policy_stop (0: pause at once; agentbox resume DIR continues)")
	f.StringVar(&o.via, "via", "", "how --mode exfil sends: http.fetch (default), exec, mcp:TOOL, delegate (a subagent reads .env) or delegate-send (a subagent sends it)")
	f.BoolVar(&o.delegate, "delegate", false, "offer agent.delegate: a subagent in the same environment under the session's permissions (its taint and grants; scripted: mode errand)")
	o.modelFlags(f)
	o.perm.flags(f)
	f.Int64Var(&o.limits.MaxInputTokens, "max-input-tokens", 0, "model input-token budget (0: none)")
	f.Int64Var(&o.limits.MaxOutputTokens, "max-output-tokens", 0, "model output-token budget (0: none)")
	f.DurationVar(&o.limits.MaxWall, "timeout", agent.DefaultMaxWall, "wall-time budget of the session")
	f.IntVar(&o.limits.NoProgressWindow, "no-progress", agent.DefaultNoProgressWindow, "identical steps in a row that end the session")
	f.IntVar(&o.limits.CompactAfter, "compact-after", 0, "compact the context the policy sees every N tool results (ContextCompacted; 0: never)")
	o.net.addHosts(f)
	o.net.addSecrets(f)
	o.net.addLimits(f)
	f.StringVar(&o.testCmd, "test-cmd", "python3 -B -m unittest -v", "test.run's command, split on spaces, run from the workspace root")
	outputFlags(f, o)
}

// outputFlags are where agent and resume write the session's result.
func outputFlags(f *pflag.FlagSet, o *agentOptions) {
	f.StringVar(&o.tracePath, "trace", "", "write the JSONL step trace here")
	f.StringVar(&o.eventsPath, "events", "", "write the JSONL event log here")
	f.StringVar(&o.diffOut, "diff-out", "", "write the final diff here instead of printing it")
	f.BoolVar(&o.json, "json", false, "print the result as JSON")
	f.Var(isolationValue{&o.isolation}, "isolation", isolationUsage)
}

// modelFlags defines the flags of a model policy and its budgets, shared by
// agent and eval.
func (o *agentOptions) modelFlags(f *pflag.FlagSet) {
	f.StringVar(&o.model, "model", "", "model name (openai and anthropic policies)")
	f.StringVar(&o.baseURL, "base-url", "", "model API base URL (default: the provider's)")
	f.BoolVar(&o.stream, "stream", false, "stream model replies")
	f.StringVar(&o.apiKeyFile, "api-key-file", "", "file holding the API key (default: $OPENAI_API_KEY or $ANTHROPIC_API_KEY)")
	f.StringVar(&o.pricesFile, "prices", "", `JSON price table: {"MODEL": {"input_per_mtok": USD, "output_per_mtok": USD}}`)
	f.Float64Var(&o.priceIn, "price-in", 0, "USD per million input tokens of --model")
	f.Float64Var(&o.priceOut, "price-out", 0, "USD per million output tokens of --model")
	f.IntVar(&o.limits.MaxSteps, "max-steps", agent.DefaultMaxSteps, "step budget of a session")
	f.IntVar(&o.limits.MaxToolCalls, "max-tool-calls", agent.DefaultMaxToolCalls, "tool-call budget of a session")
	f.Float64Var(&o.limits.MaxCostUSD, "max-cost", 0, "money budget of a session in USD (0: none; needs the model's price)")
}

// policyFor builds the policy; for a model policy, the client with the key from
// the coordinator's environment or a file. It returns the key's text for the trace
// to scrub; the key goes nowhere else but into the client.
func (o *agentOptions) policyFor() (agent.Policy, []string, error) {
	if o.policy == "scripted" {
		switch o.mode {
		case agent.ModeGood, agent.ModeLoop, agent.ModeEscape, agent.ModeExfil, agent.ModeLong:
			return &agent.Scripted{Mode: o.mode, Via: o.via}, nil, nil
		}
		return nil, nil, fmt.Errorf("--mode %q: use good, loop, escape, exfil or long", o.mode)
	}
	if o.policy != "openai" && o.policy != "anthropic" {
		return nil, nil, fmt.Errorf("--policy %q: use scripted, openai or anthropic", o.policy)
	}
	if o.model == "" {
		return nil, nil, errors.New("--model is required for the openai and anthropic policies")
	}
	key, err := o.apiKey()
	if err != nil {
		return nil, nil, err
	}
	prices := model.PriceTable{}
	if o.pricesFile != "" {
		b, err := os.ReadFile(o.pricesFile)
		if err != nil {
			return nil, nil, fmt.Errorf("--prices: %w", err)
		}
		if err := json.Unmarshal(b, &prices); err != nil {
			return nil, nil, fmt.Errorf("--prices %s: %w", o.pricesFile, err)
		}
	}
	if o.priceIn > 0 || o.priceOut > 0 {
		prices[o.model] = model.Price{InputPerMTok: o.priceIn, OutputPerMTok: o.priceOut}
	}
	if _, ok := prices.Lookup(o.model); o.limits.MaxCostUSD > 0 && !ok {
		return nil, nil, fmt.Errorf("--max-cost needs the price of %s: give --price-in and --price-out, or --prices", o.model)
	}
	base := o.baseURL
	if base == "" && o.policy == "openai" {
		base = "https://api.openai.com/v1"
	}
	c, meter, err := agent.NewClient(agent.ClientConfig{Provider: o.policy, BaseURL: base, APIKey: key, Stream: o.stream, Prices: prices})
	if err != nil {
		return nil, nil, err
	}
	var redact []string
	if !key.IsZero() {
		redact = []string{key.Reveal()}
	}
	return &agent.ModelPolicy{Client: c, Meter: meter, Model: o.model, Label: o.policy, Prices: prices}, redact, nil
}

func (o *agentOptions) apiKey() (model.Secret, error) {
	if o.apiKeyFile != "" {
		b, err := os.ReadFile(o.apiKeyFile)
		if err != nil {
			return model.Secret{}, fmt.Errorf("--api-key-file: %w", err)
		}
		return model.NewSecret(strings.TrimSpace(string(b))), nil
	}
	name := map[string]string{"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}[o.policy]
	k := os.Getenv(name)
	if k == "" && (o.policy == "anthropic" || o.baseURL == "") {
		return model.Secret{}, fmt.Errorf("no API key: set %s or give --api-key-file", name)
	}
	return model.NewSecret(k), nil // a local OpenAI-compatible server (--base-url) may need none
}

func agentMain(ctx context.Context, o *agentOptions, argv []string) error {
	if o.workspace == "" {
		return errors.New("--workspace is required")
	}
	if o.goalFile != "" {
		b, err := os.ReadFile(o.goalFile)
		if err != nil {
			return fmt.Errorf("--goal-file: %w", err)
		}
		o.goal = string(b)
	}
	if strings.TrimSpace(o.goal) == "" {
		return errors.New("--goal (or --goal-file) is required")
	}
	ws, err := filepath.Abs(o.workspace)
	if err != nil {
		return err
	}
	policy, redact, err := o.policyFor()
	if err != nil {
		return err
	}
	gc, eg, err := o.perm.config()
	if err != nil {
		return err
	}
	// The environment's own hosts (--allow-host) are allowlisted destinations for
	// the policy's risk function too.
	gc.Allow = append(gc.Allow, o.net.allow...)
	perms, err := agent.NewPermissions(gc)
	if err != nil {
		return err
	}
	if gc.Approvals == nil && o.session == "" && terminal.IsTerminal(os.Stdin) {
		perms.Approver = &agent.Prompt{In: os.Stdin, Out: stderr} // a person is there to ask
	}

	ctx, cancel := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer cancel()

	svc, closeSvc, err := newLocalEnv(config.DefaultStateDir(), o.isolation)
	if err != nil {
		return err
	}
	defer closeSvc()
	network, err := o.net.envNetwork(os.Getenv)
	if err != nil {
		return err
	}
	var store *journal.Store
	if o.session != "" {
		if store, err = openSession(o, argv); err != nil {
			return err
		}
		defer store.Close()
		if gc.Approvals == nil {
			perms.Approver = &agent.Mailbox{Store: store, Wait: o.approvalWait, Notify: func(r grant.Request) {
				fmt.Fprintf(stderr, "agentbox: approval %s awaits: agentbox sessions show %s; agentbox sessions approve|deny %s %s\n",
					r.ID, o.session, o.session, r.ID)
			}}
		}
	}
	var sinks []trace.Sink
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	open := func(p string) (io.Writer, error) {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
		return f, nil
	}
	if o.eventsPath != "" {
		w, err := open(o.eventsPath)
		if err != nil {
			return fmt.Errorf("--events: %w", err)
		}
		sinks = append(sinks, trace.NewJSONL(w))
	}
	if o.tracePath != "" {
		w, err := open(o.tracePath)
		if err != nil {
			return fmt.Errorf("--trace: %w", err)
		}
		sinks = append(sinks, trace.NewProjector(w))
	}
	mount := o.perm.mountMCP
	if o.delegate || strings.HasPrefix(o.via, "delegate") {
		sub := func(string) (agent.Policy, error) { return &agent.Scripted{Mode: agent.ModeErrand}, nil }
		if mp, ok := policy.(*agent.ModelPolicy); ok {
			sub = func(string) (agent.Policy, error) { return mp.Sub(), nil }
		}
		next := mount
		mount = func(ctx context.Context, r *tool.Registry) (func(), error) {
			if err := r.Register(agent.DelegateTool(agent.Delegation{Policy: sub, Limits: agent.Limits{MaxWall: o.limits.MaxWall,
				MaxInputTokens: o.limits.MaxInputTokens, MaxOutputTokens: o.limits.MaxOutputTokens}})); err != nil {
				return nil, err
			}
			return next(ctx, r)
		}
	}
	if o.ledger != "" {
		ledger, err := filepath.Abs(o.ledger)
		if err != nil {
			return err
		}
		next := mount
		mount = func(ctx context.Context, r *tool.Registry) (func(), error) {
			if err := r.Register(agent.LedgerTool(ledger)); err != nil {
				return nil, err
			}
			return next(ctx, r)
		}
	}
	live := sinks
	if store != nil {
		live = nil // the outputs are projections of the journal, written at the end
	}
	s, err := agent.RunSession(ctx, agent.SessionOptions{
		Env: tool.EnvOptions{Service: svc, Owner: env.Owner{Tenant: "local", Task: "agent"},
			Workspace: ws, TTL: o.limits.MaxWall + time.Minute, Network: network, Egress: eg,
			// Bytecode caches would otherwise show up in the final diff.
			Tools: tool.BuiltinOptions{TestCommand: strings.Fields(o.testCmd), Env: []string{"PYTHONDONTWRITEBYTECODE=1"}}},
		Mount: mount, Permissions: perms, Goal: o.goal, Policy: policy, Limits: o.limits, Model: o.model, Sinks: live, Redact: redact,
		Store: store, Crash: crashHook(os.Getenv("AGENTBOX_CRASH_AT"))})
	if s == nil {
		return err
	}
	if store != nil {
		if perr := project(store, sinks); perr != nil && err == nil {
			err = perr
		}
	}
	if o.diffOut != "" && s.DiffErr == nil {
		s.DiffErr = os.WriteFile(o.diffOut, s.Diff, 0o644)
	}
	if perr := printAgentResult(o, s.Result, s.Diff, s.DiffErr, s.EventsAnchor); perr != nil {
		return perr
	}
	if err != nil {
		return err
	}
	if s.StopReason != agent.StopDone {
		return exitError{1}
	}
	return nil
}

func printAgentResult(o *agentOptions, res *agent.Result, diff []byte, derr error, anchor string) error {
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			*agent.Result
			Diff string `json:"diff,omitempty"`
			// EventsAnchor is the hash of the last event, for agentbox trace verify --anchor.
			EventsAnchor string `json:"events_anchor"`
			Isolation    string `json:"isolation"`
		}{res, string(diff), anchor, isolationValue{&o.isolation}.String()})
	}
	fmt.Fprintf(stdout, "stop_reason: %s", res.StopReason)
	if res.Detail != "" {
		fmt.Fprintf(stdout, " (%s)", res.Detail)
	}
	fmt.Fprintf(stdout, "\nsteps: %d\ntool_calls: %d\ncost_usd: %.6f (%d model requests, %d input tokens, %d output tokens)\n",
		res.Steps, res.ToolCalls, res.Usage.CostUSD, res.Usage.Requests, res.Usage.InputTokens, res.Usage.OutputTokens)
	fmt.Fprintf(stdout, "duration: %s\nsession: %s\nisolation: %s\n", res.Duration.Round(time.Millisecond), res.Session, isolationValue{&o.isolation})
	if o.tracePath != "" {
		fmt.Fprintf(stdout, "trace: %s\n", o.tracePath)
	}
	if o.eventsPath != "" {
		fmt.Fprintf(stdout, "events: %s\nevents_anchor: %s\n", o.eventsPath, anchor)
	}
	switch {
	case derr != nil:
		fmt.Fprintf(stderr, "agentbox: final diff: %v\n", derr)
	case o.diffOut != "":
		fmt.Fprintf(stdout, "diff: %s (%d bytes)\n", o.diffOut, len(diff))
	case len(diff) == 0:
		fmt.Fprintln(stdout, "diff: (no changes)")
	default:
		fmt.Fprintf(stdout, "diff:\n%s", diff)
	}
	return nil
}

// newLocalEnv starts the in-process environments of agent, grade and eval
// (env.OpenLocal) on the templates of stateDir's image store, at level; the
// returned function closes them, saying what failed.
func newLocalEnv(stateDir string, level runner.Isolation) (env.Service, func(), error) {
	images, err := openImages(stateDir)
	if err != nil {
		return nil, nil, err
	}
	m, closeFn, err := env.OpenLocal(images, level)
	if err != nil {
		return nil, nil, err
	}
	return m, func() {
		if err := closeFn(); err != nil {
			fmt.Fprintf(stderr, "agentbox: close environments: %v\n", err)
		}
	}, nil
}
