package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentbox/agentbox/internal/tool"
)

// The fixtures in testdata are the golden traces of package agent (seed 002's
// three modes on the in-memory calc task), copied here to test reading,
// projection, stats and divergence on their own.

func TestLogSeqIDsAndRedaction(t *testing.T) {
	mem := &Memory{}
	var buf bytes.Buffer
	secret := "sk-test-planted-0123456789"
	l := NewLog(LogOptions{Session: "s1", Sinks: []Sink{mem, NewJSONL(&buf)}, Redact: []string{secret, "short"}})
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			l.Emit(ToolExecutionFinished, i, "call-"+secret, map[string]string{"out": fmt.Sprintf("key=%s short", secret)})
		}(i)
	}
	wg.Wait()
	evs := mem.Events()
	written := buf.String()
	read, err := ReadEvents(&buf)
	if err != nil || len(read) != 50 || len(evs) != 50 {
		t.Fatalf("%d events, %d read back, %v", len(evs), len(read), err)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) || e.ID != fmt.Sprintf("s1/%d", i+1) || read[i].Seq != e.Seq {
			t.Fatalf("event %d: seq %d id %q (sinks must see seq order)", i, e.Seq, e.ID)
		}
	}
	if strings.Contains(written, secret) {
		t.Fatal("the secret reached a sink")
	}
	if !strings.Contains(written, "key=[redacted] short") || !strings.Contains(written, "call-[redacted]") {
		t.Fatalf("redaction: %s", evs[0].Data)
	}
}

type failing struct{}

func (failing) Append(Event) error { return errors.New("disk full") }

func TestLogSinkFailure(t *testing.T) {
	mem := &Memory{}
	l := NewLog(LogOptions{Session: "s", Sinks: []Sink{failing{}, mem}})
	l.Emit(SessionCreated, 0, "", SessionInfo{})
	if l.Err() == nil || len(mem.Events()) != 1 {
		t.Fatalf("err %v, %d events in the healthy sink", l.Err(), len(mem.Events()))
	}
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestProjection: the step trace is exactly the projection of the event log, and
// the streaming Projector writes the same lines.
func TestProjection(t *testing.T) {
	for _, mode := range []string{"good", "loop", "escape"} {
		t.Run(mode, func(t *testing.T) {
			evs, err := ReadEvents(bytes.NewReader(fixture(t, mode+".events.jsonl")))
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			p := NewProjector(&buf)
			for _, e := range evs {
				if err := p.Append(e); err != nil {
					t.Fatal(err)
				}
			}
			if want := fixture(t, mode+".trace.jsonl"); !bytes.Equal(buf.Bytes(), want) {
				t.Fatalf("projection:\n%s\nwant:\n%s", buf.Bytes(), want)
			}
			fromEvents, err := Load(filepath.Join("testdata", mode+".events.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			fromTrace, err := Load(filepath.Join("testdata", mode+".trace.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			if d, diff := Diverge(fromEvents, fromTrace); diff {
				t.Fatalf("Load of events and of trace differ: %s", d)
			}
		})
	}
	t.Run("gap", func(t *testing.T) {
		evs, _ := ReadEvents(bytes.NewReader(fixture(t, "good.events.jsonl")))
		if _, err := Project(append(evs[:3:3], evs[4:]...)); err == nil {
			t.Fatal("a log with a gap was projected")
		}
	})
	t.Run("no steps", func(t *testing.T) {
		l := NewLog(LogOptions{Session: "s"})
		p := NewProjector(nil)
		l.o.Sinks = []Sink{p}
		l.Emit(SessionCreated, 0, "", SessionInfo{Session: "s"})
		l.Emit(SessionEnded, 0, "", SessionEnd{StopReason: "budget_exhausted"})
		s := p.Steps()
		if len(s) != 1 || s[0].Step != 0 || s[0].End.StopReason != "budget_exhausted" || s[0].Session == nil {
			t.Fatalf("%+v", s)
		}
	})
}

func TestStats(t *testing.T) {
	for _, tc := range []struct {
		mode     string
		steps    int
		calls    map[string]int
		failures map[string]int
		rate     float64
		stop     string
	}{
		{"good", 4, map[string]int{"fs.read": 1, "patch.apply": 1, "test.run": 1, "task.finish": 1}, map[string]int{}, 0, "done"},
		{"loop", 3, map[string]int{"fs.read": 3}, map[string]int{}, 0, "no_progress"},
		{"escape", 2, map[string]int{"fs.read": 1}, map[string]int{"EPERM": 1}, 1, "policy_stop"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			steps, err := Load(filepath.Join("testdata", tc.mode+".trace.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			s := ComputeStats(steps)
			if s.Steps != tc.steps || fmt.Sprint(s.CallsPerTool) != fmt.Sprint(tc.calls) ||
				fmt.Sprint(s.FailuresByCode) != fmt.Sprint(tc.failures) || s.ToolErrorRate != tc.rate || s.StopReason != tc.stop {
				t.Fatalf("%+v", s)
			}
			if len(s.BudgetCurve) != tc.steps || s.BudgetCurve[0].StepsLeft != 49 && tc.mode != "loop" {
				t.Fatalf("budget curve %+v", s.BudgetCurve)
			}
			var out bytes.Buffer
			if err := s.WriteText(&out); err != nil || !strings.Contains(out.String(), "stop "+tc.stop) {
				t.Fatalf("%v\n%s", err, out.String())
			}
		})
	}
	t.Run("percentiles", func(t *testing.T) {
		var steps []Step
		for i := 1; i <= 20; i++ {
			steps = append(steps, Step{Step: i, DurationMS: int64(i * 10), Usage: Usage{Requests: 1, CostUSD: 0.01}})
		}
		s := ComputeStats(steps)
		if s.StepP50MS != 100 || s.StepP95MS != 190 || s.ModelRequests != 20 || s.CostUSD < 0.199 || s.CostUSD > 0.201 {
			t.Fatalf("%+v", s)
		}
	})
}

func TestDiverge(t *testing.T) {
	load := func(m string) []Step {
		s, err := Load(filepath.Join("testdata", m+".trace.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	good := load("good")
	if d, diff := Diverge(good, load("good")); diff {
		t.Fatalf("a trace differs from itself: %s", d)
	}
	if d, diff := Diverge(good, load("loop")); !diff || d.Step != 2 || d.What != "decision" {
		t.Fatalf("good vs loop: %+v", d)
	}
	if d, diff := Diverge(good, load("escape")); !diff || d.Step != 1 || d.What != "decision" {
		t.Fatalf("good vs escape: %+v", d)
	}
	// Re-serialising arguments and changing timings is not a divergence.
	same := load("good")
	same[0].Decision.Args = json.RawMessage(`{ "path" : "calc.py" }`)
	same[1].DurationMS, same[1].BudgetBefore.WallLeftMS = 999, 5
	if d, diff := Diverge(good, same); diff {
		t.Fatalf("formatting counted as a divergence: %s", d)
	}
	changed := load("good")
	r := *changed[2].Result
	r.Error, r.OK = &tool.Error{Code: tool.ETIMEDOUT}, false
	changed[2].Result = &r
	if d, diff := Diverge(good, changed); !diff || d.Step != 3 || d.What != "result" {
		t.Fatalf("changed result: %+v", d)
	}
	if d, diff := Diverge(good, good[:3]); !diff || d.What != "length" || d.Step != 4 {
		t.Fatalf("shorter: %+v", d)
	}
}

// FuzzProject feeds arbitrary event logs (a trace file is untrusted input to
// `agentbox trace stats` and `replay`) through reading, projection, stats and
// divergence: none may panic.
func FuzzProject(f *testing.F) {
	for _, m := range []string{"good", "loop", "escape"} {
		b, err := os.ReadFile(filepath.Join("testdata", m+".events.jsonl"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		lines := bytes.Split(b, []byte("\n"))
		f.Add(bytes.Join(lines[:len(lines)/2], []byte("\n"))) // a session cut short
	}
	f.Add([]byte(`{"seq":1,"type":"TurnCompleted","data":{"state":7}}`))
	f.Add([]byte(`{"seq":1,"type":"ToolExecutionFinished","data":{"result":{"ok":false,"error":null}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		evs, err := ReadEvents(bytes.NewReader(b))
		if err != nil {
			return
		}
		steps, err := Project(evs)
		if err != nil {
			return
		}
		s := ComputeStats(steps)
		if s.ToolErrors > s.ToolCalls || s.ToolCalls > s.Steps {
			t.Fatalf("inconsistent stats %+v", s)
		}
		Diverge(steps, steps)
	})
}
