package agent

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/model"
	"github.com/agentbox/agentbox/internal/model/modeltest"
	"github.com/agentbox/agentbox/internal/tool"
	"github.com/agentbox/agentbox/internal/trace"
)

// protocols are the four ways a session can talk to a model.
var protocols = []struct {
	name      string
	anthropic bool
	stream    bool
}{{"openai", false, false}, {"openai-stream", false, true}, {"anthropic", true, false}, {"anthropic-stream", true, true}}

const testKey = "sk-agentbox-test-KEY-0123456789abcdef"

// newModel starts a scripted server and the client stack and policy for it.
func newModel(t *testing.T, anthropic, stream bool, prices model.PriceTable, turns ...modeltest.Turn) (*modeltest.Server, *ModelPolicy) {
	t.Helper()
	var srv *modeltest.Server
	provider := "openai"
	if anthropic {
		srv, provider = modeltest.NewAnthropic(t, turns...), "anthropic"
	} else {
		srv = modeltest.NewOpenAI(t, turns...)
	}
	clock := modeltest.NewClock()
	c, meter, err := NewClient(ClientConfig{Provider: provider, BaseURL: srv.URL, APIKey: model.NewSecret(testKey),
		Stream: stream, Prices: prices, Clock: clock, Rand: modeltest.FixedRand{Frac: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	return srv, &ModelPolicy{Client: c, Meter: meter, Model: "test-model", Label: provider, Prices: prices}
}

// keptProtocol fails if a request broke the protocol.
func keptProtocol(t *testing.T, got []modeltest.Received) {
	t.Helper()
	for i, r := range got {
		if len(r.Violations) > 0 {
			t.Fatalf("request %d broke the protocol: %v", i+1, r.Violations)
		}
	}
}

var fixCalcArgs = mustJSON(map[string]string{"path": "calc.py",
	"old": "def add(a, b):\n    \"\"\"Return the sum of a and b.\"\"\"\n    return a - b",
	"new": "def add(a, b):\n    \"\"\"Return the sum of a and b.\"\"\"\n    return a + b"})

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// fixCalcScript is a model that reads, tries to finish too early and patches in
// one reply, runs the tests, and finishes.
var fixCalcScript = []modeltest.Turn{
	{Text: "Let me read the code.", Calls: []modeltest.Call{{Name: "fs_read", Args: `{"path":"calc.py"}`}}},
	{Calls: []modeltest.Call{{Name: "task_finish", Args: `{"summary":"done?"}`}, {Name: "patch_apply", Args: fixCalcArgs}}},
	{Calls: []modeltest.Call{{Name: "test_run", Args: `{}`}}},
	{Text: "Tests pass.", Calls: []modeltest.Call{{Name: "task_finish", Args: `{"summary":"add returns a + b"}`}}},
}

// TestModelSessionInMemory drives the calc fix through each wire protocol on the
// in-memory tools: task.finish is refused until the tests pass after the change.
func TestModelSessionInMemory(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv, pol := newModel(t, p.anthropic, p.stream, nil, fixCalcScript...)
			reg, w := newMemCalc(t)
			res, evs, steps := session(t, Options{Policy: pol, Tools: reg})
			if res.StopReason != StopDone || res.Steps != 5 || res.ToolCalls != 5 || res.Answer != "add returns a + b" {
				t.Fatalf("%+v", res)
			}
			if !strings.Contains(w.files["calc.py"], "return a + b") || w.calls["task.finish"] != 1 {
				t.Fatalf("finish ran %d times; calc.py:\n%s", w.calls["task.finish"], w.files["calc.py"])
			}
			if e := steps[1].Result.Error; e == nil || e.Code != tool.EPRECONDITION {
				t.Fatalf("the early finish: %+v", steps[1].Result)
			}
			got := srv.Received()
			if len(got) != 4 || srv.Remaining() != 0 {
				t.Fatalf("%d requests, %d turns left", len(got), srv.Remaining())
			}
			keptProtocol(t, got)
			// Request 3 answers both calls of reply 2, as untrusted data; the refusal
			// is an error result the model can read.
			res3 := got[2].Results[len(got[2].Results)-2:]
			if !strings.Contains(res3[0].Content, `untrusted="true"`) || !strings.Contains(res3[0].Content, `"code":"EPRECONDITION"`) {
				t.Errorf("refusal rendered as %q", res3[0].Content)
			}
			if p.anthropic && !res3[0].IsError {
				t.Error("refusal not flagged is_error")
			}
			if !strings.Contains(got[1].Results[0].Content, "def add(a, b):\n") {
				t.Errorf("file content not sent raw: %q", got[1].Results[0].Content)
			}
			// Accounting: one record per response, usage in the budget and the trace.
			var responses int
			for _, e := range evs {
				if e.Type == trace.ModelResponseReceived {
					responses++
				}
			}
			if responses != 4 || res.Usage.Requests != 4 || res.Usage.InputTokens == 0 || res.Usage.OutputTokens == 0 {
				t.Fatalf("%d response events, usage %+v", responses, res.Usage)
			}
			st := trace.ComputeStats(steps)
			if st.ModelRequests != 4 || st.InputTokens != res.Usage.InputTokens {
				t.Errorf("stats %+v vs usage %+v", st, res.Usage)
			}
		})
	}
}

// TestModelMalformedArgs: arguments that are not a JSON object go back to the
// model as an observation; the tool does not run.
func TestModelMalformedArgs(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv, pol := newModel(t, p.anthropic, p.stream, nil,
				modeltest.Turn{Calls: []modeltest.Call{{Name: "fs_write", Args: `{"path": "calc.py", "content": "x"`}}},
				modeltest.Turn{Text: "I give up."})
			reg, w := newMemCalc(t)
			res, _, steps := session(t, Options{Policy: pol, Tools: reg})
			if res.StopReason != StopPolicy || res.Answer != "I give up." || w.calls["fs.write"] != 0 || res.ToolCalls != 0 {
				t.Fatalf("%+v, %d writes", res, w.calls["fs.write"])
			}
			if steps[0].Decision.ArgsError == "" || steps[0].Result.Error.Code != tool.EINVAL {
				t.Fatalf("step 1: %+v %+v", steps[0].Decision, steps[0].Result)
			}
			r := srv.Received()[1].Results
			if len(r) != 1 || !strings.Contains(r[0].Content, "The tool was not run") {
				t.Fatalf("observation: %+v", r)
			}
		})
	}
}

// TestModelErrors: retries are recorded; an authentication failure stops the
// session without retrying.
func TestModelErrors(t *testing.T) {
	t.Run("429 then success", func(t *testing.T) {
		srv, pol := newModel(t, true, false, nil,
			modeltest.Turn{Status: 429, Header: http.Header{"Retry-After": {"3"}}},
			modeltest.Turn{Status: 529},
			modeltest.Turn{Text: "nothing to do"})
		reg, _ := newMemCalc(t)
		res, evs, _ := session(t, Options{Policy: pol, Tools: reg})
		if res.StopReason != StopPolicy || len(srv.Received()) != 3 {
			t.Fatalf("%+v after %d requests", res, len(srv.Received()))
		}
		var retries []trace.ModelRetryInfo
		for _, e := range evs {
			if e.Type == trace.ModelRetry {
				var r trace.ModelRetryInfo
				json.Unmarshal(e.Data, &r)
				retries = append(retries, r)
			}
		}
		if len(retries) != 2 || retries[0].ErrorClass != "rate_limited" || retries[0].RetryAfterMS != 3000 || retries[1].ErrorClass != "unavailable" {
			t.Fatalf("retries %+v", retries)
		}
	})
	t.Run("auth", func(t *testing.T) {
		srv := modeltest.NewAnthropic(t, modeltest.Turn{Text: "never"})
		c, meter, err := NewClient(ClientConfig{Provider: "anthropic", BaseURL: srv.URL, Clock: modeltest.NewClock()})
		if err != nil {
			t.Fatal(err)
		}
		reg, _ := newMemCalc(t)
		res, _, steps := session(t, Options{Policy: &ModelPolicy{Client: c, Meter: meter, Model: "m"}, Tools: reg})
		if res.StopReason != StopModelError || steps[0].ErrorClass != "auth" || len(srv.Received()) != 1 {
			t.Fatalf("%+v class %q after %d requests", res, steps[0].ErrorClass, len(srv.Received()))
		}
	})
}

// TestModelBudgets: token and money budgets are spent before the request that
// would overrun them is sent.
func TestModelBudgets(t *testing.T) {
	read := modeltest.Turn{InputTokens: 1000, OutputTokens: 10, Calls: []modeltest.Call{{Name: "fs_read", Args: `{"path":"calc.py"}`}}}
	write := func(c string) modeltest.Turn {
		return modeltest.Turn{InputTokens: 1000, OutputTokens: 10, Calls: []modeltest.Call{{Name: "fs_write", Args: mustJSON(map[string]string{"path": "n", "content": c})}}}
	}
	prices := model.PriceTable{"test-model": {InputPerMTok: 1000, OutputPerMTok: 2000}} // $1 per 1,000 input tokens
	for _, tc := range []struct {
		name     string
		lim      Limits
		prices   model.PriceTable
		stop     StopReason
		requests int
		detail   string
	}{
		{"input tokens", Limits{MaxInputTokens: 10}, nil, StopBudgetExhausted, 0, "input tokens"},
		{"input tokens after one reply", Limits{MaxInputTokens: 1500}, nil, StopBudgetExhausted, 1, "input tokens"},
		{"cost", Limits{MaxCostUSD: 1.5}, prices, StopBudgetExhausted, 1, "cost"},
		{"cost without a price", Limits{MaxCostUSD: 1.5}, nil, StopModelError, 0, "no price"},
		{"output tokens", Limits{MaxOutputTokens: 25}, nil, StopBudgetExhausted, 1, "output tokens"},
		{"output tokens too few to start", Limits{MaxOutputTokens: 15}, nil, StopBudgetExhausted, 0, "output tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, pol := newModel(t, false, false, tc.prices, read, write("1"), write("2"), write("3"))
			reg, _ := newMemCalc(t)
			res, _, _ := session(t, Options{Policy: pol, Tools: reg, Limits: tc.lim})
			if res.StopReason != tc.stop || len(srv.Received()) != tc.requests || !strings.Contains(res.Detail, tc.detail) {
				t.Fatalf("%s (%s) after %d requests", res.StopReason, res.Detail, len(srv.Received()))
			}
			if tc.lim.MaxCostUSD > 0 && res.Usage.CostUSD > tc.lim.MaxCostUSD {
				t.Errorf("spent $%v of $%v", res.Usage.CostUSD, tc.lim.MaxCostUSD)
			}
			if tc.lim.MaxInputTokens > 0 && int64(res.Usage.InputTokens) > tc.lim.MaxInputTokens {
				t.Errorf("read %d input tokens of %d", res.Usage.InputTokens, tc.lim.MaxInputTokens)
			}
		})
	}
	t.Run("reply capped by the output budget", func(t *testing.T) {
		srv, pol := newModel(t, false, false, nil, modeltest.Turn{Text: "ok"})
		reg, _ := newMemCalc(t)
		session(t, Options{Policy: pol, Tools: reg, Limits: Limits{MaxOutputTokens: 100}})
		var body struct {
			MaxTokens int `json:"max_tokens"`
		}
		json.Unmarshal(srv.Received()[0].Body, &body)
		if body.MaxTokens != 100 {
			t.Fatalf("max_tokens %d, want the 100 left in the budget", body.MaxTokens)
		}
	})
}

// TestModelOverflow: a context overflow is answered by trimming once and trying
// again, and the session keeps the trimmed history for the requests after it.
func TestModelOverflow(t *testing.T) {
	srv, pol := newModel(t, false, false, nil,
		modeltest.Turn{Calls: []modeltest.Call{{Name: "fs_read", Args: `{"path":"big.txt"}`}}},
		modeltest.Turn{Status: 400, ErrorMessage: "This model's maximum context length is 2000 tokens. However, your messages resulted in 12000 tokens."},
		modeltest.Turn{Calls: []modeltest.Call{{Name: "fs_read", Args: `{"path":"calc.py"}`}}},
		modeltest.Turn{Text: "done"})
	reg, w := newMemCalc(t)
	w.files["big.txt"] = strings.Repeat("0123456789abcdef\n", 3000)
	res, _, _ := session(t, Options{Policy: pol, Tools: reg})
	got := srv.Received()
	if res.StopReason != StopPolicy || len(got) != 4 || res.ToolCalls != 2 {
		t.Fatalf("%+v after %d requests", res, len(got))
	}
	if len(got[2].Body) >= len(got[1].Body)/2 || !strings.Contains(string(got[2].Body), "to fit the context window") {
		t.Fatalf("the retry was not trimmed: %d then %d bytes", len(got[1].Body), len(got[2].Body))
	}
	if len(got[3].Body) > len(got[2].Body)+4096 {
		t.Fatalf("the next request went back to the untrimmed history: %d bytes after %d", len(got[3].Body), len(got[2].Body))
	}
}
