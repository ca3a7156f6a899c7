package modeltest

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, url string, h map[string]string, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	return resp, b.String()
}

// Each broken request is answered 400 with a violation naming the rule, and
// consumes no turn; the valid one is answered.
func TestOpenAIRules(t *testing.T) {
	cases := []struct {
		name, body, rule string
	}{
		{"valid", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, ""},
		{"no model", `{"messages":[{"role":"user","content":"hi"}]}`, "model is required"},
		{"unanswered call", `{"model":"m","messages":[{"role":"user","content":"hi"},
			{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},
			{"role":"user","content":"x"}]}`, "must be followed by tool messages"},
		{"result for no call", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"zz","content":"x"}]}`, "not a tool call of the preceding"},
		{"arguments not a string", `{"model":"m","messages":[{"role":"user","content":"hi"},
			{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":{}}}]},
			{"role":"tool","tool_call_id":"a","content":"x"}]}`, "must be a string"},
		{"tool name with a dot", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"fs.read","parameters":{}}}]}`, "invalid function name"},
		{"stream_options without stream", `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":true}}`, "stream_options"},
	}
	s := NewOpenAI(t, Turn{Text: "ok"})
	for i, tc := range cases {
		resp, body := post(t, s.URL+"/chat/completions", nil, tc.body)
		rec := s.Received()[i]
		if tc.rule == "" {
			if resp.StatusCode != 200 || len(rec.Violations) > 0 || !strings.Contains(body, `"content":"ok"`) {
				t.Errorf("%s: %d %s %v", tc.name, resp.StatusCode, body, rec.Violations)
			}
			continue
		}
		if resp.StatusCode != 400 || !strings.Contains(body, tc.rule) || !strings.Contains(strings.Join(rec.Violations, ";"), tc.rule) {
			t.Errorf("%s: %d %s, violations %v; want 400 naming %q", tc.name, resp.StatusCode, body, rec.Violations, tc.rule)
		}
	}
}

func TestAnthropicRules(t *testing.T) {
	ok := map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01"}
	cases := []struct {
		name, body, rule string
		hdr              map[string]string
	}{
		{"valid", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, "", ok},
		{"no key", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, "invalid x-api-key", map[string]string{}},
		{"no version", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, "anthropic-version", map[string]string{"x-api-key": "k"}},
		{"no max_tokens", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "max_tokens", ok},
		{"starts with assistant", `{"model":"m","max_tokens":1,"messages":[{"role":"assistant","content":"hi"}]}`, "first message", ok},
		{"roles do not alternate", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"a"},{"role":"user","content":"b"}]}`, "alternate", ok},
		{"empty text block", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`, "non-empty", ok},
		{"tool_use without result", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"a"},
			{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},{"role":"user","content":"b"}]}`, "without tool_result", ok},
		{"result after text", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"a"},
			{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},
			{"role":"user","content":[{"type":"text","text":"b"},{"type":"tool_result","tool_use_id":"t1","content":"x"}]}]}`, "must come before", ok},
		{"result for an unknown call", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"zz","content":"x"}]}]}`, "unexpected tool_use_id", ok},
		{"tool input not an object", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"a"},
			{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":"{}"}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]}]}`, "input object", ok},
		{"schema without type object", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"a"}],"tools":[{"name":"f","input_schema":{}}]}`, "input_schema", ok},
		{"temperature above 1", `{"model":"m","max_tokens":1,"temperature":1.5,"messages":[{"role":"user","content":"a"}]}`, "temperature", ok},
	}
	s := NewAnthropic(t, Turn{Text: "ok"})
	for i, tc := range cases {
		resp, body := post(t, s.URL+"/v1/messages", tc.hdr, tc.body)
		rec := s.Received()[i]
		switch {
		case tc.rule == "":
			if resp.StatusCode != 200 || !strings.Contains(body, `"text":"ok"`) {
				t.Errorf("%s: %d %s %v", tc.name, resp.StatusCode, body, rec.Violations)
			}
		case tc.name == "no key":
			if resp.StatusCode != 401 || !strings.Contains(body, "authentication_error") {
				t.Errorf("%s: %d %s", tc.name, resp.StatusCode, body)
			}
		default:
			if resp.StatusCode != 400 || !strings.Contains(body, tc.rule) {
				t.Errorf("%s: %d %s, violations %v; want 400 naming %q", tc.name, resp.StatusCode, body, rec.Violations, tc.rule)
			}
		}
	}
	if s.Remaining() != 0 {
		t.Errorf("the valid request did not consume the turn")
	}
}

// Streamed replies split arguments across many events and end with the
// protocol's end marker; usage is sent only when asked for.
func TestStreamShapes(t *testing.T) {
	call := Call{Name: "f", Args: `{"path": "a/b/c.py", "n": 12345}`}
	o := NewOpenAI(t, Turn{Calls: []Call{call}}, Turn{Text: "x"})
	_, body := post(t, o.URL+"/chat/completions", nil, `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`)
	if n := strings.Count(body, `"arguments":`); n < 6 {
		t.Errorf("arguments in %d chunks, want many", n)
	}
	if !strings.Contains(body, `"usage":{`) || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Errorf("openai stream:\n%s", body)
	}
	_, body = post(t, o.URL+"/chat/completions", nil, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if strings.Contains(body, `"usage"`) {
		t.Errorf("usage sent without include_usage")
	}

	a := NewAnthropic(t, Turn{Calls: []Call{call}})
	_, body = post(t, a.URL+"/v1/messages", map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01"},
		`{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if n := strings.Count(body, "input_json_delta"); n < 6 {
		t.Errorf("input in %d deltas, want many", n)
	}
	var joined strings.Builder
	for _, line := range strings.Split(body, "\n") {
		var ev struct {
			Delta struct {
				PartialJSON string `json:"partial_json"`
			} `json:"delta"`
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok && json.Unmarshal([]byte(d), &ev) == nil {
			joined.WriteString(ev.Delta.PartialJSON)
		}
	}
	if joined.String() != call.Args || !strings.HasSuffix(body, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n") {
		t.Errorf("anthropic stream reassembles to %q:\n%s", joined.String(), body)
	}
}

func TestClock(t *testing.T) {
	c := NewClock()
	start := c.Now()
	if err := c.Sleep(context.Background(), 3*time.Second); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Second)
	if c.Now().Sub(start) != 4*time.Second || len(c.Sleeps()) != 1 {
		t.Errorf("now moved %v, sleeps %v", c.Now().Sub(start), c.Sleeps())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if c.Sleep(ctx, time.Second) == nil {
		t.Errorf("Sleep ignored a cancelled context")
	}
	if (FixedRand{Frac: 1}).Int64N(10) != 9 || (FixedRand{}).Int64N(10) != 0 {
		t.Errorf("FixedRand range wrong")
	}
}
