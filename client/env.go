package client

import (
	"context"
	"net/http"
	"net/url"
	"sort"
)

// Create makes a new environment.
func (c *Client) Create(ctx context.Context, r CreateRequest) (Environment, error) {
	var e Environment
	err := c.do(ctx, http.MethodPost, "/v1/environments", nil, r, &e)
	return e, err
}

// Get describes the environment id.
func (c *Client) Get(ctx context.Context, id string) (Environment, error) {
	var e Environment
	err := c.do(ctx, http.MethodGet, "/v1/environments/"+esc(id), nil, nil, &e)
	return e, err
}

// List returns the caller's environments that carry every label given.
func (c *Client) List(ctx context.Context, labels map[string]string) ([]Environment, error) {
	q := url.Values{}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		q.Add("label", k+"="+labels[k])
	}
	var out struct {
		Environments []Environment `json:"environments"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/environments", q, nil, &out)
	return out.Environments, err
}

// Pause freezes every process of the environment: they use no CPU until Resume
// and continue where they stopped. Files stay readable and writable; Exec and
// Start fail with CodePaused until Resume. With r.ToDisk an environment created
// with layer disk also has its writable layer taken out of RAM.
func (c *Client) Pause(ctx context.Context, id string, r PauseRequest) (Environment, error) {
	var e Environment
	err := c.do(ctx, http.MethodPost, "/v1/environments/"+esc(id)+"/pause", nil, r, &e)
	return e, err
}

// Resume thaws a paused environment.
func (c *Client) Resume(ctx context.Context, id string) (Environment, error) {
	var e Environment
	err := c.do(ctx, http.MethodPost, "/v1/environments/"+esc(id)+"/resume", nil, nil, &e)
	return e, err
}

// Snapshot makes the environment's workspace a read-only snapshot in O(1); the
// environment continues above it, under the same id, in a new sandbox (its
// running commands end, /workspace carries on).
func (c *Client) Snapshot(ctx context.Context, id string) (Snapshot, error) {
	var s Snapshot
	err := c.do(ctx, http.MethodPost, "/v1/environments/"+esc(id)+"/snapshot", nil, nil, &s)
	return s, err
}

// Fork makes r.Count environments from a snapshot of environment id (a new one
// unless r.Snapshot names one), each with a private workspace layer above it.
func (c *Client) Fork(ctx context.Context, id string, r ForkRequest) ([]Environment, error) {
	var out struct {
		Environments []Environment `json:"environments"`
	}
	err := c.do(ctx, http.MethodPost, "/v1/environments/"+esc(id)+"/fork", nil, r, &out)
	return out.Environments, err
}

// Destroy kills everything in the environment and removes it. Destroying an
// environment that is already gone succeeds.
func (c *Client) Destroy(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/v1/environments/"+esc(id), nil, nil, nil)
}
