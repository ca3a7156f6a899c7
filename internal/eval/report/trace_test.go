package report

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentbox/agentbox/internal/tool"
	"github.com/agentbox/agentbox/internal/trace"
	"github.com/google/go-cmp/cmp"
)

func TestSummarize(t *testing.T) {
	args := json.RawMessage(`{"cmd": "` + strings.Repeat("a", 200) + `"}`)
	for _, tc := range []struct {
		name string
		step trace.Step
		want stepLine
	}{
		{"ok with text", trace.Step{Step: 1, DurationMS: 1500, Decision: &trace.Decision{Tool: "exec.run", Args: args},
			Result: &tool.Envelope{OK: true, Text: "\n\n  first\nsecond", Truncated: true}},
			stepLine{N: 1, Tool: "exec.run", Args: `{"cmd":"` + strings.Repeat("a", 112) + "…", Status: "ok", Class: "ok", Duration: "1.5s", Result: "(truncated) first"}},
		{"tool error", trace.Step{Step: 2, Decision: &trace.Decision{Tool: "fs.write"},
			Result: &tool.Envelope{Error: &tool.Error{Code: tool.ENOMATCH, Message: "old string not found"}}},
			stepLine{N: 2, Tool: "fs.write", Status: "ENOMATCH", Class: "err", Duration: "0ms", Result: "old string not found"}},
		{"policy stop", trace.Step{Step: 3, Decision: &trace.Decision{Stop: true, Reason: "gave up\nfor good"}},
			stepLine{N: 3, Tool: "(stop)", Status: "stop", Class: "ok", Duration: "0ms", Result: "gave up for good"}},
		{"args error", trace.Step{Step: 4, Decision: &trace.Decision{Tool: "fs.read", Args: json.RawMessage(`{bad`), ArgsError: "invalid JSON"}},
			stepLine{N: 4, Tool: "fs.read", Args: "{bad", Status: "args error", Class: "err", Duration: "0ms", Result: "invalid JSON"}},
		{"model error", trace.Step{Step: 5, Error: "429 too many requests", ErrorClass: "rate_limit"},
			stepLine{N: 5, Status: "failed: rate_limit", Class: "err", Duration: "0ms", Result: "429 too many requests"}},
		{"control characters", trace.Step{Step: 6, Decision: &trace.Decision{Tool: "fs.read\x1b[2J"},
			Result: &tool.Envelope{OK: true, Text: "ok\x07"}},
			stepLine{N: 6, Tool: "fs.read\uFFFD[2J", Status: "ok", Class: "ok", Duration: "0ms", Result: "ok\uFFFD"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, summarize(tc.step)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// A trace with a broken line, a line past the length limit, and no end: what
// can be read is shown, what cannot is named, and the page says the end is
// missing.
func TestReadTimelineDamaged(t *testing.T) {
	dir := t.TempDir()
	lines := strings.Split(strings.TrimSpace(string(traceLines(t, "done"))), "\n")
	body := lines[0] + "\n{not json\n" + `{"step":2,"decision":{"tool":"x","args":{"p":"` + strings.Repeat("z", LineCap) + `"}}}` + "\n\n" + lines[1] + "\n"
	if err := os.WriteFile(filepath.Join(dir, "trace.jsonl"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	tl := readTimeline(root, "trace.jsonl")
	var got []int
	for _, s := range tl.Steps {
		got = append(got, s.N)
	}
	if !cmp.Equal(got, []int{1, 2}) || tl.Stop != "" || tl.Goal == "" {
		t.Errorf("steps %v stop %q goal %q", got, tl.Stop, tl.Goal)
	}
	if len(tl.Problems) != 2 || !strings.HasPrefix(tl.Problems[0], "line 2: not a trace step") ||
		tl.Problems[1] != "line 3: longer than 8.0 MiB, skipped" {
		t.Errorf("problems %q", tl.Problems)
	}
}

func TestReadTimelineCaps(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := 1; i <= StepCap+7; i++ {
		line, _ := json.Marshal(trace.Step{Step: i, Decision: &trace.Decision{Tool: "fs.read"}, Result: &tool.Envelope{OK: true}})
		b.Write(line)
		b.WriteString("\n")
	}
	for range maxProblems + 3 {
		b.WriteString("garbage\n")
	}
	end, _ := json.Marshal(trace.Step{End: &trace.SessionEnd{StopReason: "max_steps"}})
	b.Write(end)
	if err := os.WriteFile(filepath.Join(dir, "trace.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	tl := readTimeline(root, "trace.jsonl")
	if len(tl.Steps) != StepCap || tl.Omitted != 7 || len(tl.Problems) != maxProblems || tl.MoreProblems != 3 || tl.Stop != "max_steps" {
		t.Errorf("%d steps, %d omitted, %d problems + %d, stop %q", len(tl.Steps), tl.Omitted, len(tl.Problems), tl.MoreProblems, tl.Stop)
	}
}

func TestReadLine(t *testing.T) {
	br := bufio.NewReaderSize(strings.NewReader("short\n"+strings.Repeat("L", 40)+"\nafter\nlast"), 16)
	var got []string
	for {
		line, err := readLine(br, 20)
		switch {
		case errors.Is(err, errLong):
			got = append(got, "<long>")
			continue
		case err != nil && err != io.EOF:
			t.Fatal(err)
		}
		got = append(got, string(line))
		if err == io.EOF {
			break
		}
	}
	if d := cmp.Diff([]string{"short", "<long>", "after", "last"}, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// The transcript keeps each step in full up to MessageCap: the model's words,
// the call and its arguments indented, what came back; a stop has no call.
func TestTranscribe(t *testing.T) {
	for _, tc := range []struct {
		name             string
		step             trace.Step
		say, call, input string
		output           string
	}{
		{"call", trace.Step{Step: 1, Decision: &trace.Decision{Tool: "fs.read", Args: json.RawMessage(`{"path":"a.py"}`), Text: "  Let me look.\n"},
			Result: &tool.Envelope{OK: true, Data: json.RawMessage(`{"size": 3}`), Text: "x\ny\n", Truncated: true}},
			"Let me look.", "fs.read", "{\n  \"path\": \"a.py\"\n}", "{\"size\":3}\nx\ny\n\n(the tool truncated its output)"},
		{"tool error", trace.Step{Step: 2, Decision: &trace.Decision{Tool: "fs.write"},
			Result: &tool.Envelope{Data: json.RawMessage("null"), Error: &tool.Error{Code: tool.EPERM, Message: "outside"}}},
			"", "fs.write", "", "EPERM: outside"},
		{"stop", trace.Step{Step: 3, Decision: &trace.Decision{Stop: true, Reason: "done", Text: "All fixed."}},
			"All fixed.", "", "", "stopped: done"},
		{"args error", trace.Step{Step: 4, Decision: &trace.Decision{Tool: "fs.read", ArgsError: "invalid JSON"}},
			"", "fs.read", "", "unusable arguments, the tool did not run: invalid JSON"},
		{"model error", trace.Step{Step: 5, Error: "401 unauthorized"}, "", "", "", "401 unauthorized"},
		{"invalid UTF-8", trace.Step{Step: 6, Decision: &trace.Decision{Tool: "t", Text: "a\xffb"}}, "a\uFFFDb", "t", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := timeline{budget: TranscriptCap}
			l := summarize(tc.step)
			tl.transcribe(&l, tc.step)
			if got := []string{l.Say, l.Call, l.Input, l.Output}; !cmp.Equal(got, []string{tc.say, tc.call, tc.input, tc.output}) {
				t.Errorf("say, call, input, output:\n got %q\nwant %q", got, []string{tc.say, tc.call, tc.input, tc.output})
			}
		})
	}

	// Caps: a long message is cut at MessageCap with a note; once the attempt's
	// TranscriptCap is spent, MinMessageCap.
	tl := timeline{budget: TranscriptCap}
	long := strings.Repeat("€", MessageCap) // 3 bytes each: the cut at MessageCap splits one
	var cut []int
	for n := 1; n <= 20; n++ {
		s := trace.Step{Step: n, Decision: &trace.Decision{Tool: "t", Text: long}}
		l := summarize(s)
		tl.transcribe(&l, s)
		body, note, ok := strings.Cut(l.Say, "\n… cut: ")
		if !ok || !strings.HasSuffix(note, " more") || !utf8.ValidString(l.Say) {
			t.Fatalf("step %d: no cut note or invalid UTF-8: %.80q", n, l.Say)
		}
		cut = append(cut, len(body))
	}
	if want := MessageCap - MessageCap%3; cut[0] != want || cut[len(cut)-1] > MinMessageCap || cut[len(cut)-1] < MinMessageCap-2 {
		t.Errorf("cut lengths %v: want %d first, %d once the budget is spent", cut, want, MinMessageCap-MinMessageCap%3)
	}
}
