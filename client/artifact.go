package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// ArtifactHeader carries an artifact's description (JSON, ASCII) on the response
// that carries its content.
const ArtifactHeader = "Agentbox-Artifact"

// Export stores the workspace file at path as an artifact owned by the caller.
func (c *Client) Export(ctx context.Context, id, path string) (Artifact, error) {
	var a Artifact
	err := c.do(ctx, http.MethodPost, "/v1/environments/"+esc(id)+"/artifacts", nil, ExportRequest{Path: path}, &a)
	return a, err
}

// ReadArtifact reads length bytes of an artifact from offset (length 0: to the end)
// and describes it. Another tenant's artifact is ENOENT, like a missing one.
func (c *Client) ReadArtifact(ctx context.Context, ref string, offset, length int64) ([]byte, Artifact, error) {
	q := url.Values{}
	if offset != 0 {
		q.Set("offset", strconv.FormatInt(offset, 10))
	}
	if length != 0 {
		q.Set("length", strconv.FormatInt(length, 10))
	}
	b, h, err := c.raw(ctx, http.MethodGet, "/v1/artifacts/"+esc(ref), q)
	if err != nil {
		return nil, Artifact{}, err
	}
	var a Artifact
	if err := json.Unmarshal([]byte(h.Get(ArtifactHeader)), &a); err != nil {
		return nil, Artifact{}, fmt.Errorf("client: artifact header: %w", err)
	}
	return b, a, nil
}

// ErrorTrailer carries an error envelope (JSON) when a streamed response failed
// after its status was sent; ErrorStatusTrailer carries the status the error would
// have had.
const (
	ErrorTrailer       = "Agentbox-Error"
	ErrorStatusTrailer = "Agentbox-Error-Status"
)

func trailerError(resp *http.Response) error {
	t := resp.Trailer.Get(ErrorTrailer)
	if t == "" {
		return nil
	}
	status, _ := strconv.Atoi(resp.Trailer.Get(ErrorStatusTrailer))
	if status == 0 {
		status = http.StatusInternalServerError
	}
	var env Envelope
	if err := json.Unmarshal([]byte(t), &env); err != nil || env.Error == nil || env.Error.Code == "" {
		return &Error{Code: CodeInternal, Message: "stream failed", Status: status}
	}
	env.Error.Status = status
	return env.Error
}
