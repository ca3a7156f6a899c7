package sessionapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/coordinator"
	"github.com/agentbox/agentbox/internal/journal"
	"github.com/agentbox/agentbox/internal/trace"
)

// Client calls a coordinator (agentbox sessions --coordinator URL).
type Client struct {
	base, token string
	hc          *http.Client
}

// NewClient returns a client of the coordinator at base (http(s)://HOST:PORT).
func NewClient(base, token string) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("coordinator URL %q: want http(s)://HOST:PORT", base)
	}
	return &Client{base: strings.TrimRight(base, "/"), token: token, hc: &http.Client{}}, nil
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("coordinator %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var env client.Envelope
		if json.Unmarshal(b, &env) == nil && env.Error != nil {
			env.Error.Status = resp.StatusCode
			return env.Error
		}
		return fmt.Errorf("coordinator %s: %s", c.base, resp.Status)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

func esc(s string) string { return url.PathEscape(s) }

// Create starts a session.
func (c *Client) Create(ctx context.Context, s coordinator.Spec) (coordinator.Info, error) {
	var i coordinator.Info
	return i, c.do(ctx, http.MethodPost, "/v1/sessions", s, &i)
}

// List returns every session.
func (c *Client) List(ctx context.Context) ([]coordinator.Info, error) {
	var out struct {
		Sessions []coordinator.Info `json:"sessions"`
	}
	return out.Sessions, c.do(ctx, http.MethodGet, "/v1/sessions", nil, &out)
}

// Get returns a session's state.
func (c *Client) Get(ctx context.Context, id string) (coordinator.Info, error) {
	var i coordinator.Info
	return i, c.do(ctx, http.MethodGet, "/v1/sessions/"+esc(id), nil, &i)
}

// Cancel ends a session.
func (c *Client) Cancel(ctx context.Context, id string) (coordinator.Info, error) {
	var i coordinator.Info
	return i, c.do(ctx, http.MethodPost, "/v1/sessions/"+esc(id)+"/cancel", nil, &i)
}

// Approvals lists the requests a session awaits.
func (c *Client) Approvals(ctx context.Context, id string) ([]journal.Awaiting, error) {
	var out struct {
		Approvals []journal.Awaiting `json:"approvals"`
	}
	return out.Approvals, c.do(ctx, http.MethodGet, "/v1/sessions/"+esc(id)+"/approvals", nil, &out)
}

// Answer approves (with scope, or once) or denies a request.
func (c *Client) Answer(ctx context.Context, id, request string, allow bool, scope string) (coordinator.Answered, error) {
	verb := "deny"
	var in any
	if allow {
		verb, in = "approve", AnswerRequest{Scope: scope}
	}
	var out coordinator.Answered
	return out, c.do(ctx, http.MethodPost, "/v1/sessions/"+esc(id)+"/approvals/"+esc(request)+"/"+verb, in, &out)
}

// Resolve records a person's verdict (as: succeeded or failed) on a call a
// paused session's recovery left unknown.
func (c *Client) Resolve(ctx context.Context, id, call, as, note string) (coordinator.Info, error) {
	var i coordinator.Info
	return i, c.do(ctx, http.MethodPost, "/v1/sessions/"+esc(id)+"/calls/"+esc(call)+"/resolve", ResolveRequest{As: as, Note: note}, &i)
}

// Steer leaves a message in a session's steering inbox.
func (c *Client) Steer(ctx context.Context, id, kind, message string) (trace.SteerRequest, error) {
	var out struct {
		Steer trace.SteerRequest `json:"steer"`
	}
	return out.Steer, c.do(ctx, http.MethodPost, "/v1/sessions/"+esc(id)+"/steer", SteerRequest{Kind: kind, Message: message}, &out)
}
