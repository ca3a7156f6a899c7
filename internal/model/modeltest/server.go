package modeltest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// Call is a tool call a scripted turn makes.
type Call struct {
	// ID defaults to call_<turn>_<n> (OpenAI) or toolu_<turn>_<n> (Anthropic).
	ID   string
	Name string
	// Args is the arguments' JSON text, sent as is: a test can script malformed
	// arguments. A non-streamed Anthropic reply, whose input must be JSON, sends
	// text that is not JSON as a JSON string.
	Args string
}

// Turn is one scripted reply.
type Turn struct {
	Text  string
	Calls []Call
	// Status, when non-zero, makes the reply an HTTP error in the provider's
	// format instead; ErrorType and ErrorMessage default from the status.
	Status       int
	ErrorType    string
	ErrorMessage string
	// Header is added to the reply (for example Retry-After).
	Header http.Header
	// StopReason is the provider's word; it defaults from the content.
	StopReason string
	// InputTokens defaults to the request body's length / 4, OutputTokens to the
	// reply's text and arguments length / 4 + 1.
	InputTokens, OutputTokens int
}

// Received is a request as the server saw it.
type Received struct {
	Path   string
	Header http.Header
	Body   []byte
	Stream bool
	Model  string
	// Results are the tool results the request carries, in order.
	Results []Result
	// Violations lists the protocol rules the request broke; when there are any
	// the server answered 400 and consumed no turn.
	Violations []string
	// Turn is the index of the scripted turn that answered, or -1.
	Turn int

	includeUsage bool
}

// Result is a tool result found in a request.
type Result struct {
	CallID  string
	Content string
	IsError bool
}

type protocol interface {
	path() string
	// check validates a request and extracts what Received records.
	check(h http.Header, body []byte) (rec Received, authFailed bool)
	reply(w http.ResponseWriter, t Turn, idx int, rec Received)
	fail(w http.ResponseWriter, status int, typ, msg string)
}

// Server is a scripted model server.
type Server struct {
	// URL is the base URL to configure the adapter with: it ends in /v1 for the
	// OpenAI protocol (which appends /chat/completions) and is the bare host for
	// Anthropic (which appends /v1/messages).
	URL string

	proto protocol
	srv   *httptest.Server

	mu       sync.Mutex
	turns    []Turn
	next     int
	received []Received
}

// NewOpenAI starts a server speaking OpenAI Chat Completions; it is closed when the
// test ends.
func NewOpenAI(t testing.TB, turns ...Turn) *Server {
	s := start(t, openaiProto{}, turns)
	s.URL = s.srv.URL + "/v1"
	return s
}

// NewAnthropic starts a server speaking the Anthropic Messages API; it is closed
// when the test ends.
func NewAnthropic(t testing.TB, turns ...Turn) *Server {
	s := start(t, anthropicProto{}, turns)
	s.URL = s.srv.URL
	return s
}

func start(t testing.TB, p protocol, turns []Turn) *Server {
	s := &Server{proto: p, turns: turns}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// Received returns the requests received so far.
func (s *Server) Received() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.received...)
}

// Remaining returns how many scripted turns have not been served.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.turns) - s.next
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != s.proto.path() {
		s.proto.fail(w, http.StatusNotFound, "not_found_error", "no route for "+r.Method+" "+r.URL.Path)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		return
	}
	rec, authFailed := s.proto.check(r.Header, body)
	rec.Path, rec.Header, rec.Body, rec.Turn = r.URL.Path, r.Header.Clone(), body, -1

	s.mu.Lock()
	var turn Turn
	idx := -1
	switch {
	case authFailed:
	case len(rec.Violations) > 0:
	case s.next >= len(s.turns):
		rec.Violations = append(rec.Violations, fmt.Sprintf("script exhausted after %d turns", len(s.turns)))
	default:
		idx, turn = s.next, s.turns[s.next]
		s.next++
		rec.Turn = idx
	}
	s.received = append(s.received, rec)
	s.mu.Unlock()

	switch {
	case authFailed:
		s.proto.fail(w, http.StatusUnauthorized, "authentication_error", "invalid x-api-key")
	case idx < 0:
		s.proto.fail(w, http.StatusBadRequest, "invalid_request_error", strings.Join(rec.Violations, "; "))
	default:
		for k, vs := range turn.Header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		if turn.Status != 0 {
			typ, msg := turn.ErrorType, turn.ErrorMessage
			if msg == "" {
				msg = http.StatusText(turn.Status)
			}
			s.proto.fail(w, turn.Status, typ, msg)
			return
		}
		s.proto.reply(w, turn, idx, rec)
	}
}

// usage fills in the token counts of a turn.
func usage(t Turn, rec Received) (in, out int) {
	in, out = t.InputTokens, t.OutputTokens
	if in == 0 {
		in = len(rec.Body)/4 + 1
	}
	if out == 0 {
		n := len(t.Text)
		for _, c := range t.Calls {
			n += len(c.Name) + len(c.Args)
		}
		out = n/4 + 1
	}
	return in, out
}

// pieces splits s into chunks of about n bytes on rune boundaries, so a stream
// delivers text and arguments across many events as real servers do.
func pieces(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		i := min(n, len(s))
		for i < len(s) && !utf8.RuneStart(s[i]) {
			i++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// sse writes server-sent events and flushes after each.
type sse struct {
	w http.ResponseWriter
}

func newSSE(w http.ResponseWriter) sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return sse{w}
}

func (s sse) event(name string, v any) {
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	if raw, ok := v.(string); ok {
		fmt.Fprintf(s.w, "data: %s\n\n", raw)
	} else {
		b, _ := json.Marshal(v)
		fmt.Fprintf(s.w, "data: %s\n\n", b)
	}
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// isObject reports whether raw is a JSON object.
func isObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{' && json.Unmarshal(raw, &m) == nil
}
