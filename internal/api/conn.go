package api

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/wire"
)

// Slow clients. The http.Server bounds the headers (ReadHeaderTimeout) and idle
// keep-alive connections (IdleTimeout), and Serve caps the connections served at
// once (limits.max_connections). A body has limits.body_timeout to arrive, set as
// the connection's read deadline when the handler starts and cleared once the
// body has been read: a whole-request ReadTimeout would instead cut event
// streams and long exec waits, whose connection the server keeps reading to
// notice a client that went away.

// timeBody bounds the arrival of r's body, if it has one.
func (s *Server) timeBody(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	d := time.Duration(s.cfg.Limits.BodyTimeout)
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(time.Now().Add(d)) != nil {
		return // not a connection that has deadlines (a test's recorder)
	}
	r.Body = &timedBody{ReadCloser: r.Body, timeout: d, clear: func() { rc.SetReadDeadline(time.Time{}) }}
}

// timedBody clears the read deadline when its body ends, and reports a deadline
// that passed as a body that came too slowly. That deadline stays: the server
// would otherwise wait for the rest of the body, to discard it, before it
// answers.
type timedBody struct {
	io.ReadCloser
	timeout time.Duration
	clear   func()
	once    sync.Once
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.once.Do(b.clear)
	}
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = &wire.Error{Status: http.StatusRequestTimeout, Err: err, Body: client.Error{Code: client.CodeTimeout,
				Message:         fmt.Sprintf("the request body did not arrive within %v", b.timeout),
				SuggestedAction: "send the body at once, or less of it per request; the operator can raise limits.body_timeout"}}
		}
	}
	return n, err
}
