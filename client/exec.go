package client

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
)

// Exec runs a command and waits for it to end. A command that fails or is killed by
// a limit is a Result, not an error.
func (c *Client) Exec(ctx context.Context, id string, r ExecRequest) (*Result, error) {
	var res Result
	if err := c.do(ctx, http.MethodPost, "/v1/environments/"+esc(id)+"/exec", nil, r, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Run runs a command in a fresh environment, from a warm pool of the daemon
// when one has its shape, and destroys the environment after: one round trip
// where Create, Exec and Destroy are three. The environment's teardown
// finishes in the daemon after the result is sent.
func (c *Client) Run(ctx context.Context, r RunRequest) (*Result, error) {
	var res Result
	if err := c.do(ctx, http.MethodPost, "/v1/run", nil, r, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Start starts a command in the background and returns its process id.
func (c *Client) Start(ctx context.Context, id string, r ExecRequest) (string, error) {
	var p Process
	err := c.do(ctx, http.MethodPost, "/v1/environments/"+esc(id)+"/processes", nil, r, &p)
	return p.ID, err
}

// Wait waits for a background command to end.
func (c *Client) Wait(ctx context.Context, id, procID string) (*Result, error) {
	var res Result
	if err := c.do(ctx, http.MethodGet, procPath(id, procID)+"/wait", nil, nil, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// WriteStdin feeds data to a background command's standard input; eof closes it
// after data.
func (c *Client) WriteStdin(ctx context.Context, id, procID string, data []byte, eof bool) error {
	q := url.Values{}
	if eof {
		q.Set("eof", "true")
	}
	return c.do(ctx, http.MethodPost, procPath(id, procID)+"/stdin", q, bytes.NewReader(data), nil)
}

// Signal sends a signal ("TERM", "KILL", "INT", ...) to a background command.
func (c *Client) Signal(ctx context.Context, id, procID, sig string) error {
	return c.do(ctx, http.MethodPost, procPath(id, procID)+"/signal", nil, SignalRequest{Signal: sig}, nil)
}

// Resize changes the size of a background command's terminal (ExecRequest.TTY).
func (c *Client) Resize(ctx context.Context, id, procID string, rows, cols int) error {
	return c.do(ctx, http.MethodPost, procPath(id, procID)+"/resize", nil, ResizeRequest{Rows: rows, Cols: cols}, nil)
}

func procPath(id, procID string) string {
	return "/v1/environments/" + esc(id) + "/processes/" + esc(procID)
}
