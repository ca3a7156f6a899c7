package egress

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
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
// Values are found as they are, hex-encoded (either case) and base64-encoded
// (either alphabet, padded or not, at any offset). It sees what the proxy sees: a
// value encoded otherwise (compressed, encrypted, encoded twice, base64 broken
// into lines) or split across requests passes, and the shapes of secret.Scan
// are looked for in the text as sent only.
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
	values  valueSet
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
			for _, n := range encodings(v) {
				r.values.add(n)
			}
		}
	}
	return r, nil
}

// find returns what in text is a secret, as "rule NAME" or "a value the session
// read", never the secret itself; "" if nothing.
func (r scanRule) find(text string) string {
	if what := r.values.find(text); what != "" {
		return what
	}
	if fs := secret.Scan(text); len(fs) > 0 {
		return fmt.Sprintf("%s (%s, %d bytes)", fs[0].Rule, fs[0].Class, fs[0].End-fs[0].Start)
	}
	return ""
}

// encodings returns the needles of a value: the value; its hex, matched in
// either case; and for base64 (standard and URL alphabets, padded or not) the
// characters that depend on the value's bytes alone, for each of the three
// alignments the value can have in the encoded text (what precedes it shifts
// it by 0, 1 or 2 bytes in a 3-byte group). Encoding the few values a session
// read and looking for all of them in one pass (valueSet) is cheaper than
// decoding every candidate run of a request at every alignment
// (BenchmarkScanFind), and finds the same.
func encodings(v string) []needle {
	out := []needle{{text: v}, {text: hex.EncodeToString([]byte(v)), how: "hex", fold: true}}
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		for shift := range 3 {
			e := enc.EncodeToString(append(make([]byte, shift), v...))
			// Characters [start, end) hold 6 bits each of the value only: the
			// first ones mix in the bytes before it, the last one those after.
			start, end := (shift*8+5)/6, (shift+len(v))*8/6
			out = append(out, needle{text: e[start:end], how: "base64"})
		}
	}
	return out
}

// needle is a form of a value that must not leave: the value itself, or a
// substring every encoding of it holds wherever it sits in the encoded text.
// Every needle is at least 4 bytes long (MinScanValue is more).
type needle struct {
	text string
	how  string // "", "base64" or "hex"
	fold bool   // matched ignoring ASCII case (hex of either case)
}

// valueSet finds any of its needles in one pass over a text: a bit filter on
// each 4-byte window (as is, and case-folded for the fold needles) and, on a
// hit, the needles that begin with that window.
type valueSet struct {
	filter [1 << 16 / 64]uint64
	by     map[uint32][]needle
	fold   bool // some needle is matched ignoring case
}

func window(s string) uint32 {
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

// caseless folds ASCII letters of a window (and some punctuation with them,
// which only costs a filter hit).
const caseless = 0x20202020

func slot(w uint32) uint32 { return (w * 0x9E3779B1) >> 16 }

func (vs *valueSet) add(n needle) {
	w := window(n.text)
	if n.fold {
		n.text = strings.ToLower(n.text)
		w |= caseless
	}
	if vs.by == nil {
		vs.by = map[uint32][]needle{}
	}
	for _, m := range vs.by[w] {
		if m.text == n.text && m.fold == n.fold {
			return
		}
	}
	vs.by[w] = append(vs.by[w], n)
	vs.fold = vs.fold || n.fold
	i := slot(w)
	vs.filter[i/64] |= 1 << (i % 64)
}

func (vs *valueSet) hit(w uint32) bool {
	i := slot(w)
	return vs.filter[i/64]&(1<<(i%64)) != 0
}

func (vs *valueSet) find(text string) string {
	if len(vs.by) == 0 || len(text) < 4 {
		return ""
	}
	w := window(text)
	for i := 0; ; i++ {
		if vs.hit(w) {
			if what := vs.match(text[i:], w, false); what != "" {
				return what
			}
		}
		if vs.fold && vs.hit(w|caseless) {
			if what := vs.match(text[i:], w|caseless, true); what != "" {
				return what
			}
		}
		if i+4 >= len(text) {
			return ""
		}
		w = w>>8 | uint32(text[i+4])<<24
	}
}

// match returns what needle filed under window key k begins rest, if any.
func (vs *valueSet) match(rest string, k uint32, fold bool) string {
	for _, n := range vs.by[k] {
		if n.fold != fold || len(rest) < len(n.text) {
			continue
		}
		if fold && strings.EqualFold(rest[:len(n.text)], n.text) || !fold && rest[:len(n.text)] == n.text {
			if n.how != "" {
				return "a value the session read, " + n.how + "-encoded"
			}
			return "a value the session read"
		}
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
