package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/journal"
	"github.com/agentbox/agentbox/internal/tool"
	"github.com/agentbox/agentbox/internal/trace"
)

// memWork is the long mode's environment for the crash campaign: the
// workspace in memory behind the built-in tools' names and schemas, and the
// real ledger.append on a host file. Like a local environment it dies with its
// driver: a resume gets a fresh one and re-derives it from the recorded Diff
// (Restorer). The store, the loop and recovery are the production code; the
// real environment is campaigned by cmd/agentbox's SIGKILL test.
type memWork struct {
	// before, if set, is called as each tool starts (steer tests: a person
	// types while it runs); a read it blocks until cancelled fails.
	before  func(ctx context.Context, tool string, args json.RawMessage)
	mu      sync.Mutex
	files   map[string]string
	tested  *tool.TestRecord
	writes  int
	version string
}

func newMemWork(t testing.TB, ledger string) (*tool.Registry, *memWork) {
	w := &memWork{files: map[string]string{}}
	w.version = w.hash()
	r := tool.NewRegistry(tool.Options{Scopes: append(slices.Clone(tool.BuiltinScopes), tool.ScopeMCP)})
	obj := func(props string, req ...string) json.RawMessage {
		b, _ := json.Marshal(append([]string{}, req...))
		return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{%s},"required":%s,"additionalProperties":false}`, props, b))
	}
	for _, s := range []tool.Spec{
		{Name: "fs.read", Scope: tool.ScopeRead, Effect: tool.EffectRead, Idempotent: true, InputSchema: obj(`"path":{"type":"string"}`, "path"), Handler: w.read},
		{Name: "fs.list", Scope: tool.ScopeRead, Effect: tool.EffectRead, Idempotent: true, InputSchema: obj(`"path":{"type":"string"}`), Handler: w.list},
		{Name: "fs.write", Scope: tool.ScopeWrite, Effect: tool.EffectWrite, Idempotent: true,
			InputSchema: obj(`"path":{"type":"string"},"content":{"type":"string"}`, "path", "content"), Handler: w.write},
		{Name: "patch.apply", Scope: tool.ScopeWrite, Effect: tool.EffectWrite,
			InputSchema: obj(`"path":{"type":"string"},"old":{"type":"string"},"new":{"type":"string"}`, "path", "old", "new"), Handler: w.replace},
		{Name: "test.run", Scope: tool.ScopeTest, Effect: tool.EffectExec, InputSchema: obj(``), Handler: w.test},
		{Name: "task.finish", Scope: tool.ScopeFinish, Effect: tool.EffectControl, Idempotent: true,
			InputSchema: obj(`"summary":{"type":"string"}`), Precondition: w.finishable, Handler: w.finish},
		LedgerTool(ledger),
	} {
		if err := r.Register(s); err != nil {
			t.Fatal(err)
		}
	}
	r.SetWorld(w)
	return r, w
}

func (w *memWork) hash() string {
	b, _ := json.Marshal(w.files) // map keys marshal sorted
	s := sha256.Sum256(b)
	return "m:" + hex.EncodeToString(s[:8])
}

func (w *memWork) Snapshot() tool.Snapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	return tool.Snapshot{Version: w.version, Writes: w.writes, Tests: w.tested}
}

func (w *memWork) Diff(context.Context) ([]byte, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return json.Marshal(w.files)
}

func (w *memWork) Restore(_ context.Context, diff []byte) error {
	if len(diff) == 0 {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.files = map[string]string{}
	if err := json.Unmarshal(diff, &w.files); err != nil {
		return err
	}
	w.version = w.hash()
	return nil
}

func (w *memWork) on(ctx context.Context, name string, raw json.RawMessage) {
	if w.before != nil {
		w.before(ctx, name, raw)
	}
}

// Rewind implements Rewinder: the live workspace is put back to a recorded diff.
func (w *memWork) Rewind(ctx context.Context, diff []byte) error {
	if len(diff) == 0 {
		diff = []byte("{}")
	}
	return w.Restore(ctx, diff)
}

func (w *memWork) read(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	w.on(ctx, "fs.read", raw)
	if err := ctx.Err(); err != nil {
		return tool.Result{}, err
	}
	a := args[struct{ Path string }](raw)
	w.mu.Lock()
	defer w.mu.Unlock()
	s, ok := w.files[a.Path]
	if !ok {
		return tool.Result{}, tool.Errorf(tool.ENOENT, false, tool.ActListDir, "%s: no such file", a.Path)
	}
	return tool.Result{Data: map[string]any{"path": a.Path, "size": len(s)}, Text: s, Source: a.Path}, nil
}

func (w *memWork) list(_ context.Context, raw json.RawMessage) (tool.Result, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return tool.Result{Data: map[string]any{"entries": slices.Sorted(maps.Keys(w.files))}}, nil
}

func (w *memWork) write(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	w.on(ctx, "fs.write", raw)
	a := args[struct{ Path, Content string }](raw)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.files[a.Path] = a.Content
	w.writes++
	w.version = w.hash()
	return tool.Result{Data: map[string]any{"path": a.Path, "bytes": len(a.Content)}}, nil
}

func (w *memWork) replace(_ context.Context, raw json.RawMessage) (tool.Result, error) {
	a := args[struct{ Path, Old, New string }](raw)
	w.mu.Lock()
	defer w.mu.Unlock()
	s, ok := w.files[a.Path]
	if !ok || strings.Count(s, a.Old) != 1 {
		return tool.Result{}, tool.Errorf(tool.ENOMATCH, false, tool.ActReread, "%s: old text not found exactly once", a.Path)
	}
	w.files[a.Path] = strings.Replace(s, a.Old, a.New, 1)
	w.writes++
	w.version = w.hash()
	return tool.Result{Data: map[string]any{"mode": "str_replace"}}, nil
}

func (w *memWork) test(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	w.on(ctx, "test.run", raw)
	w.mu.Lock()
	defer w.mu.Unlock()
	pass := true
	for _, s := range w.files {
		pass = pass && !strings.Contains(s, "todo")
	}
	code := 0
	if !pass {
		code = 1
	}
	w.tested = &tool.TestRecord{Passed: pass, ExitCode: code, Version: w.version}
	return tool.Result{Data: map[string]any{"passed": pass, "exit_code": code}}, nil
}

func (w *memWork) finishable(context.Context, json.RawMessage) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.tested == nil || !w.tested.Passed || w.tested.Version != w.version {
		return tool.Errorf(tool.EPRECONDITION, false, tool.ActRunTests, "run the tests after the last change first")
	}
	return nil
}

func (w *memWork) finish(context.Context, json.RawMessage) (tool.Result, error) {
	return tool.Result{Data: map[string]any{"summary": "done"}, Done: true}, nil
}

// campaignSteers are the person's messages to every campaign session: each
// left once, when the session first reaches its trigger (the tool starting on
// the path), as a person types while it works. A driver that dies before
// taking one leaves it in the inbox for the next. The correction comes as
// item2 is written (rolled back, then written again), the replacement as item5
// is read (its result discarded).
var campaignSteers = []struct{ tool, path, kind, msg string }{
	{"fs.read", "long/item1.txt", "ask", "how far are you?"},
	{"fs.write", "long/item2.txt", "correct", "write item2 again"},
	{"test.run", "", "supplement", "keep the files short"},
	{"fs.read", "long/item5.txt", "replace", "finish the long task; release once"},
}

// person leaves campaignSteers in the session in dir, through a handle of its
// own on the store.
func person(t testing.TB, dir string) (hook func(context.Context, string, json.RawMessage), close func()) {
	s, err := journal.Open(dir, journal.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	return func(_ context.Context, name string, raw json.RawMessage) {
		p := args[struct{ Path string }](raw).Path
		for _, c := range campaignSteers {
			if c.tool != name || c.path != p {
				continue
			}
			left, err := s.Steers(0)
			if err != nil {
				panic(err)
			}
			if slices.ContainsFunc(left, func(r trace.SteerRequest) bool { return r.Message == c.msg }) {
				continue
			}
			if _, err := Steer(s, c.kind, c.msg, "user"); err != nil {
				panic(err)
			}
		}
	}, func() { s.Close() }
}

// campaignKills is how many kills TestCrashCampaign makes at least: CI's
// 1,100, or a benchmark-style run's (-campaign.kills 10000).
var campaignKills = flag.Int("campaign.kills", 1100, "kills of TestCrashCampaign (not -short)")

// campaignCompactAfter compacts the campaign session's context every 8 results.
const campaignCompactAfter = 8

// driver runs one driver of the long session in dir: a fresh environment, the
// store opened anew (a new process), the daemon d's exec.run, RunDurable.
// crashAt(point) says whether to die at a crash point: runtime.Goexit in the
// driver's goroutine, so that nothing after the point runs or is recorded
// (and a point inside a tool's handler, process-started, is not taken for
// the handler's panic). It returns the result, or nil if the driver died, and
// when it passed each crash point, from its start (the store not yet open).
func driver(t testing.TB, dir, ledger string, d *memDaemon, crashAt func(string) bool) (res *Result, files map[string]string, points []string, at map[string]time.Duration) {
	t.Helper()
	t0 := time.Now()
	at = map[string]time.Duration{}
	hook := func(p string) {
		points = append(points, p)
		at[p] = time.Since(t0)
		if crashAt != nil && crashAt(p) {
			goruntime.Goexit()
		}
	}
	s, err := journal.Open(dir, journal.Options{NoSync: true, SnapshotEvery: 16, Crash: hook})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, w := newMemWork(t, ledger)
	if err := r.Register(d.execSpec()); err != nil {
		t.Fatal(err)
	}
	steers, closePerson := person(t, dir)
	defer closePerson()
	w.before = steers
	done := make(chan *Result, 1)
	go func() {
		var res *Result
		defer func() { done <- res }()
		var err error
		res, _, err = RunDurable(context.Background(), s, w, Options{Goal: "long", Policy: withExec{&Scripted{Mode: ModeLong}, campaignExecAt},
			Tools: r, EnvID: memDaemonID, Limits: Limits{CompactAfter: campaignCompactAfter}},
			trace.LogOptions{Session: "s-campaign", Clock: fixedClock()}, hook)
		if err != nil {
			t.Error(err)
		}
	}()
	return <-done, w.files, points, at
}

// campaignExecAt is where the long session runs its exec.run: after item4 is
// written and read, away from the steers.
const campaignExecAt = 16

func ledgerLines(t testing.TB, path string) int {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

type tally struct {
	trials, kills, converged, pausedUnknown, duplicates, lost, diverged, resumes, steerLost int
	// exec.run's: kills with its process recorded and not waited for, kills
	// while a recovery waited for it, its recoveries' verdicts, and the
	// trials that did not run it exactly once.
	processKills, reattachKills, stillRunning, ended, execNotOnce int
	recovery, toEnd                                               []time.Duration
}

// count tallies a kill at point.
func (tl *tally) count(point string) {
	switch {
	case strings.HasPrefix(point, "process-started:"):
		tl.processKills++
	case strings.HasPrefix(point, "reattached:"):
		tl.reattachKills++
	}
}

// reconciled tallies the verdicts a trial's recoveries took from a process.
func (tl *tally) reconciled(t testing.TB, dir string) {
	for _, e := range loadEvents(t, dir) {
		var r trace.Reconcile
		if e.Type != trace.RecoveryReconciled || json.Unmarshal(e.Data, &r) != nil || r.Capability != trace.CapabilityProcess {
			continue
		}
		if r.Outcome == trace.OutcomeStillRunning {
			tl.stillRunning++
		} else {
			tl.ended++
		}
	}
}

// TestCrashCampaign is seed 004's crash-point matrix as fault injection. An
// uninterrupted run lists every crash point the long session passes: each
// committed event ("seq:N": before a model request, after a tool intent, after
// a result, after a turn completed, before the end), both sides of each tool's
// side effect ("effect-before:N", "effect-after:N": the result not recorded),
// each snapshot write ("snapshot:N", before it commits), and steering: the
// person's campaignSteers are left as the session works, so the points include
// each steer taken (GoalRevised, SteerAnswered committed) and a write rolled
// back but not yet recorded ("rollback-after:N"); and each compaction of the
// context, inside it ("compact:N": begun, its summary not recorded). Each trial kills
// the driver at one of them, then resumes, killing again at random points up to
// three times in a row; an unknown call is resolved as a person would, by
// looking at the ledger. Every trial must converge: the final workspace equal
// to the uninterrupted run's, the ledger entry written exactly once, the
// journal's invariants holding (Load folds every event strictly), and every
// steer taken exactly once.
func TestCrashCampaign(t *testing.T) {
	refDir := t.TempDir()
	refLedger, refExec := filepath.Join(t.TempDir(), "ledger"), filepath.Join(t.TempDir(), "exec")
	ref, refFiles, points, _ := driver(t, refDir, refLedger, newMemDaemon(refExec), nil)
	if ref == nil || ref.StopReason != StopDone || ledgerLines(t, refLedger) != 1 || ledgerLines(t, refExec) != 1 || len(refFiles) != LongItems {
		t.Fatalf("the uninterrupted run: %+v, %d ledger lines, %d commands run, %d files", ref, ledgerLines(t, refLedger), ledgerLines(t, refExec), len(refFiles))
	}
	if ref.Steps < 30 {
		t.Fatalf("the long session took %d steps, want dozens", ref.Steps)
	}
	refState := loadState(t, refDir)
	var actions []string
	for _, s := range refState.Steers {
		actions = append(actions, s.Kind+":"+s.SafePoint)
	}
	if want := []string{"ask:", "correct:" + trace.SafeWriteRolledBack, "supplement:" + trace.SafeBoundary, "replace:" + trace.SafeReadCancelled}; !slices.Equal(actions, want) {
		t.Fatalf("the uninterrupted run took steers %v, want %v", actions, want)
	}
	for _, want := range []string{"rollback-after:", "compact:", "process-started:"} {
		if !slices.ContainsFunc(points, func(p string) bool { return strings.HasPrefix(p, want) }) {
			t.Fatalf("no %sN crash point in the uninterrupted run", want)
		}
	}
	// The plan: made at the start, left behind by the correction and by the
	// replacement (stale, kept), made again after each, all done at the end.
	refPlan := refState.Plan.Current()
	if len(refState.Plan) != 3*(LongItems+2) || len(refPlan) != LongItems+2 ||
		slices.ContainsFunc(refPlan, func(it trace.PlanItem) bool {
			return it.Status != trace.PlanDone || it.GoalRevision != refState.Goal.Epoch
		}) {
		t.Fatalf("the uninterrupted run's plan: %+v", refState.Plan)
	}
	if c := refState.Compaction; c == nil || c.Turns < 3*campaignCompactAfter || refState.Compacting != nil {
		t.Fatalf("the uninterrupted run's last compaction: %+v (pending %+v)", c, refState.Compacting)
	}
	kills := *campaignKills // every point once, then random points, multiple kills per trial
	if testing.Short() {
		kills = 0 // a sample: every 8th point, once
	}
	rng := rand.New(rand.NewPCG(17, 4))
	var tl tally
	// then, if set, is where the first resume dies (a prefix: reattached:
	// is a point of resumed drivers only).
	trial := func(first, then string) {
		dir := t.TempDir()
		ledger, execLedger := filepath.Join(dir, "ledger"), filepath.Join(dir, "exec")
		daemon := newMemDaemon(execLedger)
		tl.trials++
		res, _, _, _ := driver(t, dir, ledger, daemon, func(p string) bool { return p == first })
		if res != nil {
			t.Fatalf("the driver did not die at %s", first)
		}
		tl.kills++
		tl.count(first)
		var files map[string]string
		for again := 0; ; again++ {
			if again > 20 {
				t.Fatalf("crash at %s: no convergence after 20 resumes", first)
			}
			var crashAt func(string) bool
			var died string
			switch {
			case again == 0 && then != "":
				crashAt = func(p string) bool { died = p; return strings.HasPrefix(p, then) }
			case again < 3 && rng.IntN(2) == 0: // die again, somewhere later
				n, k := 0, 1+rng.IntN(120)
				crashAt = func(p string) bool { n++; died = p; return n == k }
			}
			t0, seq0 := time.Now(), loadState(t, dir).Seq
			tl.resumes++
			var at map[string]time.Duration
			res, files, _, at = driver(t, dir, ledger, daemon, crashAt)
			tl.toEnd = append(tl.toEnd, time.Since(t0))
			if d, ok := at[fmt.Sprintf("seq:%d", summarySeq(t, dir, seq0))]; ok {
				tl.recovery = append(tl.recovery, d)
			}
			if res == nil {
				tl.kills++
				tl.count(died)
				continue
			}
			if then != "" && again == 0 {
				t.Fatalf("crash at %s: the resume passed no %s point", first, then)
			}
			if res.StopReason != StopPaused {
				break
			}
			tl.pausedUnknown++
			st := loadState(t, dir)
			for _, id := range st.Unknown {
				outcome := trace.OutcomeFailed
				if ledgerLines(t, ledger) > 0 {
					outcome = trace.OutcomeSucceeded
				}
				s, err := journal.Open(dir, journal.Options{NoSync: true})
				if err != nil {
					t.Fatal(err)
				}
				if err := Resolve(context.Background(), s, id, outcome, "checked the ledger"); err != nil {
					t.Fatal(err)
				}
				s.Close()
			}
		}
		st := loadState(t, dir)
		tl.reconciled(t, dir)
		if n := ledgerLines(t, execLedger); n != 1 {
			tl.execNotOnce++
			t.Errorf("crash at %s: the command ran %d times, want once", first, n)
		}
		switch n := ledgerLines(t, ledger); {
		case n > 1:
			tl.duplicates++
			t.Errorf("crash at %s: the ledger entry was written %d times", first, n)
		case n == 0:
			tl.lost++
			t.Errorf("crash at %s: the ledger entry was never written", first)
		}
		if c := st.Compaction; c == nil || st.Compacting != nil || c.Summary == "" || c.Turns < refState.Compaction.Turns-campaignCompactAfter {
			tl.diverged++
			t.Errorf("crash at %s: the last compaction %+v, one pending %+v", first, c, st.Compacting)
		}
		if strings.HasPrefix(first, "compact:") && !discardedCompaction(t, dir) {
			tl.diverged++
			t.Errorf("crash at %s: no recovery reported the half-made compaction", first)
		}
		if !slices.Equal(st.Plan.Current(), refPlan) {
			tl.diverged++
			t.Errorf("crash at %s: the plan %+v, want %+v", first, st.Plan.Current(), refPlan)
		}
		if len(st.Steers) != len(campaignSteers) {
			tl.steerLost++
			t.Errorf("crash at %s: %d steers taken, want each of %d once", first, len(st.Steers), len(campaignSteers))
		}
		if res.StopReason != StopDone || st.End == nil || !maps.Equal(files, refFiles) {
			tl.diverged++
			t.Errorf("crash at %s: ended %s (%s), files equal: %t", first, res.StopReason, res.Detail, maps.Equal(files, refFiles))
			return
		}
		tl.converged++
	}
	execAfter := false // the exec.run's effect-after point, the first after its process-started
	for i, p := range points {
		sampled := !testing.Short() || i%8 == 0
		switch {
		case strings.HasPrefix(p, "process-started:"):
			n := 10 // killed again while it waits for the process it found running, then at random
			if testing.Short() {
				n = 1
			}
			for range n {
				trial(p, "reattached:")
			}
			execAfter, sampled = true, true
		case execAfter && strings.HasPrefix(p, "effect-after:"):
			execAfter, sampled = false, true // the process ended, its result not recorded
		}
		if sampled {
			trial(p, "")
		}
	}
	for tl.kills < kills {
		trial(points[rng.IntN(len(points))], "")
	}
	slices.Sort(tl.recovery)
	slices.Sort(tl.toEnd)
	p := func(d []time.Duration, q float64) time.Duration { return d[int(q*float64(len(d)-1))] }
	t.Logf("crash campaign: %d crash points in the long session (%d steps)", len(points), ref.Steps)
	t.Logf("| trials | kills | resumes | converged | paused unknown | duplicates | lost | diverged | steers not taken once |")
	t.Logf("| %d | %d | %d | %d | %d | %d | %d | %d | %d |", tl.trials, tl.kills, tl.resumes, tl.converged, tl.pausedUnknown, tl.duplicates, tl.lost, tl.diverged, tl.steerLost)
	t.Logf("exec.run on the daemon: | kills at process-started | kills at reattached | reconciled still_running | reconciled from its ended process | commands not run once |")
	t.Logf("| %d | %d | %d | %d | %d |", tl.processKills, tl.reattachKills, tl.stillRunning, tl.ended, tl.execNotOnce)
	if tl.processKills == 0 || tl.reattachKills == 0 || tl.stillRunning == 0 || tl.ended == 0 {
		t.Errorf("the campaign did not reach every exec.run recovery: kills %d at process-started, %d at reattached; %d still_running, %d ended",
			tl.processKills, tl.reattachKills, tl.stillRunning, tl.ended)
	}
	t.Logf("recovery (store opened, snapshot and tail replayed, calls reconciled, RecoverySummary committed; %d resumes): median %s, p95 %s, max %s",
		len(tl.recovery), p(tl.recovery, 0.5), p(tl.recovery, 0.95), p(tl.recovery, 1))
	t.Logf("resume to end (recovery plus the rest of the session): median %s, p95 %s", p(tl.toEnd, 0.5), p(tl.toEnd, 0.95))
	if !testing.Short() && tl.kills < 1000 {
		t.Errorf("%d kills, want at least 1,000", tl.kills)
	}
}

// summarySeq is the seq of the first RecoverySummary after seq0 in the
// session in dir, 0 if none.
func summarySeq(t testing.TB, dir string, seq0 int64) int64 {
	s, err := journal.Open(dir, journal.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs, err := s.Events(seq0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Type == trace.RecoverySummary {
			return e.Seq
		}
	}
	return 0
}

// discardedCompaction reports whether a recovery of the session in dir found
// a compaction its driver had not finished.
func discardedCompaction(t testing.TB, dir string) bool {
	s, err := journal.Open(dir, journal.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs, err := s.Events(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		var r trace.RecoverySummaryInfo
		if e.Type == trace.RecoverySummary && json.Unmarshal(e.Data, &r) == nil && r.Compaction != "" {
			return true
		}
	}
	return false
}

func loadState(t testing.TB, dir string) *journal.State {
	s, err := journal.Open(dir, journal.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.Load()
	if err != nil {
		t.Fatalf("load %s: %v", dir, err)
	}
	return st
}
