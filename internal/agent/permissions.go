package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/grant"
	"github.com/agentbox/agentbox/internal/injection"
	"github.com/agentbox/agentbox/internal/policy"
	"github.com/agentbox/agentbox/internal/provenance"
	"github.com/agentbox/agentbox/internal/secret"
	"github.com/agentbox/agentbox/internal/taint"
	"github.com/agentbox/agentbox/internal/tool"
)

// Permissions is one session's permission state: its policy, what a person granted,
// what sensitive data it has seen. It is the tool.Gate of the session's registry
// (every call is decided by the registry, in one place) and the loop asks its
// Approver for what the policy asks. It is safe for concurrent use.
type Permissions struct {
	Policy *policy.Policy // nil: policy.Default()
	Grants *grant.Set     // nil: a new empty set
	Taint  *taint.State   // nil: an untainted session
	// Sandbox, Overlay, Allowlist and Intent are what the policy knows of the
	// session beyond the call (policy.Context).
	Sandbox   policy.Strength
	Overlay   bool
	Allowlist []egress.Pattern
	Intent    policy.Intent
	// Approver answers approval requests; nil leaves every request unanswered,
	// which stops the session (policy_stop).
	Approver Approver
	// ScanEgress, when set, turns the environment's egress scan on (egress.Scan:
	// the proxy reads every request and refuses one carrying a secret) with the
	// exact secret values the session has read: when the session becomes tainted
	// and again whenever it reads a new value, before the result that tainted it
	// returns, so no later command sends unscanned. RunSession sets it to the
	// environment's (tool.Env.ScanEgress); an untainted session never calls it,
	// and its tunnels stay end to end.
	ScanEgress func(ctx context.Context, values []string) error

	once    sync.Once
	mu      sync.Mutex
	pending map[string]observed // per call id, until the loop records it
	sh      *shared             // with its subagents (Fork)
}

// shared is the state a session and its subagents hold as one: the numbering
// of approval requests (one journal holds them all) and the egress scan (one
// environment, whose proxies must refuse every value any of them read).
type shared struct {
	mu      sync.Mutex
	reqs    int
	tried   bool     // ScanEgress was called
	scanErr error    // why its last call failed; nil once it succeeded
	values  []string // the secret values read, as last given to ScanEgress
}

// observed is what the result of one call brought: new taint and injection
// flags, for the event log.
type observed struct {
	labels []taint.Label
	flags  []injection.Flag
	source string
	scan   string // "on", or why the egress scan could not be turned on
}

// PermissionConfig is how an operator sets up the permission layer of sessions: the
// policy, an approvals file for runs without a person, and capabilities granted
// before the session starts. Each session gets a Permissions of its own (NewPermissions).
type PermissionConfig struct {
	Policy    *policy.Policy   // nil: policy.Default()
	Approvals *grant.Approvals // nil: nobody answers
	// Unanswered is what an ask neither the approvals file nor a person answers
	// does, unless the file says: grant.Stop ("", agent's default) ends the
	// session with policy_stop; grant.Refuse (eval's default, nobody is there)
	// refuses the call with EPERM and its reason, and the session goes on.
	Unanswered grant.Unanswered
	// Grants are capabilities given at the start (`--grant CAP`).
	Grants []string
	// Allow is the session's egress allowlist (egress.Policy.Allow): a host on it
	// is an allowlisted destination for the risk function.
	Allow []string
}

// NewPermissions returns a fresh Permissions for one session in an environment of the
// built-in kind (a copy-on-write workspace in a namespace sandbox), with the
// approvals file's upfront capabilities (sensitive:read, which is refused rather
// than asked) and Grants given.
func NewPermissions(c PermissionConfig) (*Permissions, error) {
	g := &Permissions{Policy: c.Policy, Grants: grant.NewSet(grant.Options{}), Sandbox: policy.SandboxNamespace, Overlay: true}
	for _, a := range c.Allow {
		p, err := egress.ParseAllow(a)
		if err != nil {
			return nil, err
		}
		g.Allowlist = append(g.Allowlist, p...)
	}
	if c.Approvals != nil || c.Unanswered == grant.Refuse {
		g.Approver = ApprovalsFile{Approvals: c.Approvals, Unanswered: c.Unanswered}
	}
	if c.Approvals != nil {
		for _, cp := range c.Approvals.Upfront() {
			if _, err := g.Grants.Give(cp, "approvals", ""); err != nil {
				return nil, err
			}
		}
	}
	for _, cp := range c.Grants {
		if _, err := g.Grants.Give(cp, "operator", ""); err != nil {
			return nil, fmt.Errorf("--grant: %w", err)
		}
	}
	return g, nil
}

func (g *Permissions) init() {
	g.once.Do(func() {
		if g.Policy == nil {
			g.Policy = policy.Default()
		}
		if g.Grants == nil {
			g.Grants = grant.NewSet(grant.Options{})
		}
		if g.Taint == nil {
			g.Taint = &taint.State{}
		}
		g.pending = map[string]observed{}
		if g.sh == nil {
			g.sh = &shared{}
		}
	})
}

// Fork returns the permissions of a subagent named child, in the same
// environment: the same policy, sandbox, approver (but a journal's mailbox) and
// egress scan; the parent's
// session grants that fit (grant.Set.Fork: what a person grants the child stays
// with it); the parent's taint, inherited (taint.State.Fork), so the child
// cannot send what the parent read. What the child reads taints the parent
// when it finishes (taint.State.Merge, Delegate) and turns the one egress scan
// on at once: delegation launders neither taint nor grants.
func (g *Permissions) Fork(child string) *Permissions {
	g.init()
	c := &Permissions{Policy: g.Policy, Grants: g.Grants.Fork(child), Taint: g.Taint.Fork(child), Sandbox: g.Sandbox,
		Overlay: g.Overlay, Allowlist: g.Allowlist, Intent: g.Intent, Approver: g.Approver, ScanEgress: g.ScanEgress, sh: g.sh}
	if _, ok := g.Approver.(*Mailbox); ok {
		// The journal's mailbox holds the session's own requests: a subagent's
		// ask is unanswered (its session stops; the parent sees the refusal).
		c.Approver = nil
	}
	c.init()
	return c
}

// Decide implements tool.Gate. An outgoing call of a tainted session is refused
// while its egress scan is not on (ScanEgress failed, or a resumed session has
// not turned it on yet and cannot): the second line is not skipped silently.
func (g *Permissions) Decide(ctx context.Context, c tool.Call, a policy.Action) policy.Verdict {
	g.init()
	v := g.Policy.Decide(a, policy.Context{Call: c.ID, Grants: g.Grants, Taint: g.Taint.Labels(), Sandbox: g.Sandbox,
		Overlay: g.Overlay, Allowlist: g.Allowlist, Intent: g.Intent})
	if !v.Confine || v.Decision == policy.Deny || g.ScanEgress == nil {
		return v
	}
	g.sh.mu.Lock()
	if !g.sh.tried || g.sh.scanErr != nil {
		g.turnScanOnLocked(ctx) // try again: a failure may have passed
	}
	err := g.sh.scanErr
	g.sh.mu.Unlock()
	if err != nil {
		v.Decision = policy.Deny
		v.Needs = append(v.Needs, policy.Judgement{Need: policy.Need{Kind: policy.KindTool, Tool: c.Tool}, Decision: policy.Deny,
			Rule: "egress-scan", Why: fmt.Sprintf("%s: refused: the session is tainted and its egress scan could not be turned on (%v); nothing is sent until it is", c.Tool, err)})
	}
	return v
}

// Observe implements tool.Gate: it spends the call's one-time grants and taints
// the session with what the result holds (what the model will read: text and
// data), marked with the result's source.
func (g *Permissions) Observe(c tool.Call, _ policy.Action, v policy.Verdict, e tool.Envelope) {
	g.init()
	g.Grants.Spend(v.Grants())
	src := provenance.Legacy(e.Source).String()
	if src == "" {
		src = c.Tool
	}
	content := e.Text + "\n" + string(e.Data)
	labels := g.Taint.Observe(taint.Observation{Call: c.ID, Source: src, Content: content,
		Sensitive: v.Sensitive != "", Class: v.Sensitive})
	scan := g.scanEgress(content, v.Sensitive != "")
	flags := injection.Detect(e.Text)
	if len(labels) == 0 && len(flags) == 0 && scan == "" {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	o := g.pending[c.ID]
	o.labels, o.flags, o.source = append(o.labels, labels...), append(o.flags, flags...), src
	if scan != "" {
		o.scan = scan
	}
	g.pending[c.ID] = o
}

// scanEgress turns the egress scan on once the session is tainted, with the
// values content adds to those already read (every secret-shaped value, and for a
// sensitive read every NAME=VALUE's value). It returns "on" when it set the
// network, why it could not, or "" when nothing changed.
func (g *Permissions) scanEgress(content string, sensitive bool) string {
	if g.ScanEgress == nil || !g.Taint.Tainted() {
		return ""
	}
	g.sh.mu.Lock()
	defer g.sh.mu.Unlock()
	values := g.sh.values
	for _, v := range secretValues(content, sensitive) {
		if !slices.Contains(values, v) {
			values = append(slices.Clip(values), v)
		}
	}
	if g.sh.tried && len(values) == len(g.sh.values) {
		return ""
	}
	g.sh.values = values
	return g.turnScanOnLocked(context.Background())
}

// turnScanOnLocked calls ScanEgress with the values read; it returns "on" or
// why not, and keeps the error for Decide.
func (g *Permissions) turnScanOnLocked(ctx context.Context) string {
	g.sh.tried = true
	if g.sh.scanErr = g.ScanEgress(context.WithoutCancel(ctx), g.sh.values); g.sh.scanErr != nil {
		return "not on: " + g.sh.scanErr.Error()
	}
	return "on"
}

// secretValues returns the values of content the proxy must not let leave: those
// secret.Scan finds and, for a sensitive read (a .env file), each line's value
// after NAME= or NAME:, unquoted. Values shorter than egress.MinScanValue are left
// out (they would match by chance); the patterns still catch their shapes.
func secretValues(content string, sensitive bool) []string {
	var out []string
	add := func(v string) {
		if len(v) >= egress.MinScanValue && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	for _, f := range secret.Scan(content) {
		add(content[f.Start:f.End])
	}
	if sensitive {
		for line := range strings.Lines(content) {
			if i := strings.IndexAny(line, "=:"); i > 0 {
				add(strings.Trim(strings.TrimSpace(line[i+1:]), `"'`))
			}
		}
	}
	return out
}

// take returns and forgets what the results of a call brought.
func (g *Permissions) take(call string) observed {
	g.init()
	g.mu.Lock()
	defer g.mu.Unlock()
	o := g.pending[call]
	delete(g.pending, call)
	return o
}

func (g *Permissions) nextRequest() string {
	g.init()
	g.sh.mu.Lock()
	defer g.sh.mu.Unlock()
	g.sh.reqs++
	return "req_" + strconv.Itoa(g.sh.reqs)
}

// Approver answers approval requests: a person at a terminal, the API's
// `agentbox sessions approve|deny`, an MCP elicitation, an approvals file.
type Approver interface {
	// Approve answers one request. ErrUnanswered (or any error) leaves it
	// unanswered: the session stops with policy_stop naming the request.
	Approve(ctx context.Context, r grant.Request) (grant.Answer, error)
}

// ErrUnanswered is an approver's "nobody answered this request".
var ErrUnanswered = errors.New("no one answered the request")

// ApprovalsFile answers requests from an approvals file (grant.ParseApprovals),
// for runs without a person. A request no entry answers is refused if the
// file's unanswered: says deny, else stops the session if it says stop; a file
// that says neither (or no file) does what Unanswered says, stop by default.
type ApprovalsFile struct {
	Approvals  *grant.Approvals // nil: no entries
	Unanswered grant.Unanswered // the run's default: grant.Stop ("") or grant.Refuse
}

// Approve implements Approver.
func (f ApprovalsFile) Approve(_ context.Context, r grant.Request) (grant.Answer, error) {
	u, by := f.Unanswered, "unanswered: deny (the run's default)"
	if f.Approvals != nil {
		if ans, ok := f.Approvals.Answer(r); ok {
			return ans, nil
		}
		if f.Approvals.Unanswered != "" {
			u, by = f.Approvals.Unanswered, "approvals"
		}
	}
	if u != grant.Refuse {
		return grant.Answer{}, ErrUnanswered
	}
	ans := grant.Answer{Request: r.ID, By: by}
	for range r.Items {
		ans.Decisions = append(ans.Decisions, policy.Deny)
	}
	return ans, nil
}
