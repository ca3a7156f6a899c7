package egress

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentbox/agentbox/internal/secret"
)

// Scan is the proxy's second look at what a sandbox sends, after the permission
// layer's judgement of calls by name: with On set, every request is read before a
// byte of it goes upstream — the request target (as sent and percent-decoded),
// every header, and the body, buffered whole up to MaxBody — and one that holds a
// secret's shape (secret.Scan) or one of Values is refused. Every TLS tunnel is
// then intercepted (with the sandbox's CA, as for Secrets) so that HTTPS is read
// too. Off, tunnels stay end to end and nothing is read: no cost.
//
// It sees what the proxy sees: a secret encoded (base64, compressed, encrypted) or
// split across requests passes.
type Scan struct {
	On bool `json:"on"`
	// MaxBody bounds the body the proxy buffers to read; a larger one is refused,
	// never passed on unread. 0: DefaultScanMaxBody.
	MaxBody int64 `json:"max_body,omitempty"`
	// Values are exact strings the session has read (a .env file's values) that
	// must not leave in any request, whatever their shape. They are set by an
	// in-process caller and never marshalled; values shorter than MinScanValue are
	// ignored (they would match by chance).
	Values []string `json:"-"`
}

// DefaultScanMaxBody is Scan.MaxBody when it is zero.
const DefaultScanMaxBody = 1 << 20

// MinScanValue is the length below which a Scan value is ignored.
const MinScanValue = 8

type scanRule struct {
	on      bool
	maxBody int64
	values  []string
}

func compileScan(s Scan) (scanRule, error) {
	if s.MaxBody < 0 {
		return scanRule{}, errors.New("negative")
	}
	r := scanRule{on: s.On, maxBody: s.MaxBody}
	if r.maxBody == 0 {
		r.maxBody = DefaultScanMaxBody
	}
	for _, v := range s.Values {
		if len(v) >= MinScanValue {
			r.values = append(r.values, v)
		}
	}
	return r, nil
}

// find returns what in text is a secret, as "rule NAME" or "a value the session
// read", never the secret itself; "" if nothing.
func (r scanRule) find(text string) string {
	for _, v := range r.values {
		if strings.Contains(text, v) {
			return "a value the session read"
		}
	}
	if fs := secret.Scan(text); len(fs) > 0 {
		return fmt.Sprintf("%s (%s, %d bytes)", fs[0].Rule, fs[0].Class, fs[0].End-fs[0].Start)
	}
	return ""
}

// scanRequest reads req as Scan says, before anything of it is sent: its target,
// headers and body. The body is buffered and req.Body replaced by the buffer (sent
// with its length, chunked or not). It returns the reason and detail of a refusal,
// or "".
func (r scanRule) scanRequest(req *http.Request) (Reason, string) {
	var head strings.Builder
	head.WriteString(req.RequestURI + "\n")
	for u := req.RequestURI; ; {
		d, err := url.QueryUnescape(strings.ReplaceAll(u, "+", "%2B"))
		if err != nil || d == u || head.Len() > 5*len(req.RequestURI) {
			break
		}
		head.WriteString(d + "\n")
		u = d
	}
	for name, values := range req.Header {
		for _, v := range values {
			head.WriteString(name + ": " + v + "\n")
		}
	}
	if what := r.find(head.String()); what != "" {
		return ReasonSecretInRequest, what + " in the request head"
	}
	if req.Body == nil || req.Body == http.NoBody {
		return "", ""
	}
	b, err := io.ReadAll(io.LimitReader(req.Body, r.maxBody+1))
	if err != nil {
		return ReasonBadRequest, "reading the body: " + clip(err.Error())
	}
	if int64(len(b)) > r.maxBody {
		return ReasonScanBodyTooLarge, fmt.Sprintf("a body over %d bytes cannot be scanned", r.maxBody)
	}
	if what := r.find(string(b)); what != "" {
		return ReasonSecretInRequest, what + " in the body"
	}
	req.Body.Close()
	req.Body = io.NopCloser(bytes.NewReader(b))
	req.ContentLength = int64(len(b))
	req.TransferEncoding = nil
	if len(b) == 0 {
		req.Body = http.NoBody
	}
	return "", ""
}
