package agent

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/trace"
)

var update = flag.Bool("update", false, "rewrite the golden traces in testdata/golden")

// normalize zeroes what differs between two runs of the same session: times,
// durations, the wall time left.
func normalizeEvents(evs []trace.Event) []trace.Event {
	out := make([]trace.Event, len(evs))
	for i, e := range evs {
		e.Time = time.Time{}
		e.PrevHash, e.Hash = "", "" // they hash the times scrubbed here
		var m map[string]any
		if json.Unmarshal(e.Data, &m) == nil {
			scrubTimes(m)
			e.Data, _ = json.Marshal(m)
		}
		out[i] = e
	}
	return out
}

func scrubTimes(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			switch k {
			case "duration_ms", "wall_left_ms", "latency_ms", "ttft_ms":
				x[k] = 0
			case "observed_at":
				x[k] = "0001-01-01T00:00:00Z"
			default:
				scrubTimes(val)
			}
		}
	case []any:
		for _, y := range x {
			scrubTimes(y)
		}
	}
}

func jsonl[T any](items []T) []byte {
	var b bytes.Buffer
	for _, it := range items {
		line, _ := json.Marshal(it)
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// TestGoldenTraces records seed 002's three modes on the in-memory calc task and
// compares the event log and its JSONL projection with testdata/golden. A change
// to the loop, the events or the trace format shows up here as a diff; run with
// -update to accept it.
func TestGoldenTraces(t *testing.T) {
	for _, mode := range []string{ModeGood, ModeLoop, ModeEscape} {
		t.Run(mode, func(t *testing.T) {
			reg, _ := newMemCalc(t)
			lim := Limits{MaxWall: time.Hour}
			if mode == ModeLoop {
				lim.MaxSteps = 4
			}
			_, evs, _ := session(t, Options{Policy: &Scripted{Mode: mode}, Tools: reg, Limits: lim})
			evs = normalizeEvents(evs)
			steps, err := trace.Project(evs)
			if err != nil {
				t.Fatal(err)
			}
			for name, got := range map[string][]byte{mode + ".events.jsonl": jsonl(evs), mode + ".trace.jsonl": jsonl(steps)} {
				path := filepath.Join("testdata", "golden", name)
				if *update {
					if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test -update to create it)", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s differs from the golden file; got:\n%s", name, got)
				}
			}
		})
	}
}

// TestReplayGolden re-drives each golden trace through the loop: the replay must
// end the same way and not diverge; a recording whose result is altered must.
func TestReplayGolden(t *testing.T) {
	for _, mode := range []string{ModeGood, ModeLoop, ModeEscape} {
		t.Run(mode, func(t *testing.T) {
			rec, err := trace.Load(filepath.Join("testdata", "golden", mode+".trace.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			res, replayed, err := Replay(t.Context(), rec)
			if err != nil {
				t.Fatal(err)
			}
			if want := rec[len(rec)-1].End.StopReason; string(res.StopReason) != want || res.Steps != len(rec) {
				t.Fatalf("replay stopped %s after %d steps; recorded %s after %d", res.StopReason, res.Steps, want, len(rec))
			}
			if d, diff := trace.Diverge(rec, replayed); diff {
				t.Fatalf("replay diverges: %s", d)
			}
		})
	}
	t.Run("altered result", func(t *testing.T) {
		rec, err := trace.Load(filepath.Join("testdata", "golden", "good.trace.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		// Make the recorded test run fail: the finish must no longer happen.
		r := *rec[2].Result
		r.Data = json.RawMessage(`{"passed":false,"exit_code":1}`)
		rec[2].Result = &r
		res, replayed, err := Replay(t.Context(), rec)
		if err != nil {
			t.Fatal(err)
		}
		// The scripted policy is not re-run: replay repeats the recorded decisions,
		// so the recorded finish is still made and its recorded result returned.
		// What differs is what the altered step shows.
		d, diff := trace.Diverge(replayed, mustLoad(t, "good"))
		if !diff || d.Step != 3 || d.What != "result" {
			t.Fatalf("divergence %+v (%v), result %+v", d, diff, res)
		}
	})
}

// TestReplayTighterLimits replays a recording under a smaller step budget: the
// loop now stops earlier, and Diverge says where.
func TestReplayTighterLimits(t *testing.T) {
	rec := mustLoad(t, "good")
	info := *rec[0].Session
	info.Limits = json.RawMessage(`{"max_steps":2,"max_wall_ns":3600000000000}`)
	rec[0].Session = &info
	res, replayed, err := Replay(t.Context(), rec)
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != StopMaxSteps || res.Steps != 2 {
		t.Fatalf("%+v", res)
	}
	if d, diff := trace.Diverge(mustLoad(t, "good"), replayed); !diff || d.What != "length" || d.Step != 3 {
		t.Fatalf("divergence %+v", d)
	}
}

func mustLoad(t *testing.T, mode string) []trace.Step {
	t.Helper()
	s, err := trace.Load(filepath.Join("testdata", "golden", mode+".trace.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
