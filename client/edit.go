package client

import (
	"context"
	"net/http"
)

// ApplyPatch applies a unified diff to the workspace, all hunks or none. A hunk that
// does not apply is an ECONFLICT *Error whose message names the file and hunk.
func (c *Client) ApplyPatch(ctx context.Context, id string, patch []byte) (PatchReport, error) {
	var rep PatchReport
	err := c.do(ctx, http.MethodPost, "/v1/environments/"+esc(id)+"/patch", nil, PatchRequest{Patch: string(patch)}, &rep)
	return rep, err
}

// StrReplace replaces the one occurrence of old in the file by new; zero or several
// occurrences are an ECONFLICT *Error saying how many.
func (c *Client) StrReplace(ctx context.Context, id, path, old, new string) error {
	return c.do(ctx, http.MethodPost, "/v1/environments/"+esc(id)+"/str-replace", nil, StrReplaceRequest{Path: path, Old: old, New: new}, nil)
}

// Diff returns every change made in the environment since its creation as a
// unified diff.
func (c *Client) Diff(ctx context.Context, id string) ([]byte, error) {
	b, _, err := c.raw(ctx, http.MethodGet, "/v1/environments/"+esc(id)+"/diff", nil)
	return b, err
}
