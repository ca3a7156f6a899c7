package client

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

func filesPath(id, sub string) string { return "/v1/environments/" + esc(id) + "/files" + sub }

func pathQuery(p string) url.Values { return url.Values{"path": {p}} }

// ReadFile reads length bytes of a workspace file from offset; length 0 reads to
// the end. A file over the server's cap is an EFBIG *Error: read it in ranges.
func (c *Client) ReadFile(ctx context.Context, id, path string, offset, length int64) ([]byte, error) {
	q := pathQuery(path)
	if offset != 0 {
		q.Set("offset", strconv.FormatInt(offset, 10))
	}
	if length != 0 {
		q.Set("length", strconv.FormatInt(length, 10))
	}
	b, _, err := c.raw(ctx, http.MethodGet, filesPath(id, ""), q)
	return b, err
}

// WriteFile replaces (or creates) a workspace file atomically.
func (c *Client) WriteFile(ctx context.Context, id, path string, data []byte) error {
	return c.do(ctx, http.MethodPut, filesPath(id, ""), pathQuery(path), bytes.NewReader(data), nil)
}

// ListDir lists a workspace directory ("" or "." for the root).
func (c *Client) ListDir(ctx context.Context, id, path string) ([]FileEntry, error) {
	var out struct {
		Entries []FileEntry `json:"entries"`
	}
	err := c.do(ctx, http.MethodGet, filesPath(id, "/list"), pathQuery(path), nil, &out)
	return out.Entries, err
}

// Stat describes a workspace entry without following it.
func (c *Client) Stat(ctx context.Context, id, path string) (FileEntry, error) {
	var e FileEntry
	err := c.do(ctx, http.MethodGet, filesPath(id, "/stat"), pathQuery(path), nil, &e)
	return e, err
}

// Remove removes a workspace file or directory tree.
func (c *Client) Remove(ctx context.Context, id, path string) error {
	return c.do(ctx, http.MethodDelete, filesPath(id, ""), pathQuery(path), nil, nil)
}

// Mkdir creates a workspace directory and its missing parents.
func (c *Client) Mkdir(ctx context.Context, id, path string) error {
	return c.do(ctx, http.MethodPost, filesPath(id, "/mkdir"), pathQuery(path), nil, nil)
}

// Download writes the workspace file or directory at path to w as a tar stream.
// An error the server meets after it began sending arrives as a trailer and is
// returned as an *Error; w may then hold a partial archive.
func (c *Client) Download(ctx context.Context, id, path string, w io.Writer) error {
	req, err := c.request(ctx, http.MethodGet, filesPath(id, "/tar")+"?"+pathQuery(path).Encode(), nil, "")
	if err != nil {
		return err
	}
	resp, err := c.send(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return err
	}
	return trailerError(resp)
}

// Upload unpacks the tar stream r into the workspace directory at path.
func (c *Client) Upload(ctx context.Context, id, path string, r io.Reader) error {
	return c.do(ctx, http.MethodPut, filesPath(id, "/tar"), pathQuery(path), r, nil)
}
