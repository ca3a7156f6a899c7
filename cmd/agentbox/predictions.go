package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/eval/report"
	"github.com/agentbox/agentbox/internal/grade"
	"github.com/agentbox/agentbox/internal/task"
)

// prediction is one line of a SWE-bench predictions file.
type prediction struct {
	InstanceID string `json:"instance_id"`
	Model      string `json:"model_name_or_path"`
	Patch      string `json:"model_patch"`
}

// readPredictions reads a SWE-bench predictions file: JSONL (one object a line),
// or one JSON array of them. Each needs an instance_id, at most once;
// model_patch may be empty or null (the empty patch).
func readPredictions(name string) ([]prediction, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("--predictions: %w", err)
	}
	var preds []prediction
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '[' {
		if err := json.Unmarshal(t, &preds); err != nil {
			return nil, fmt.Errorf("--predictions %s: not a JSON array of predictions: %w", name, err)
		}
	} else {
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
		for line := 1; sc.Scan(); line++ {
			if len(bytes.TrimSpace(sc.Bytes())) == 0 {
				continue
			}
			var p prediction
			if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
				return nil, fmt.Errorf("--predictions %s:%d: %w (want {\"instance_id\", \"model_name_or_path\", \"model_patch\"})", name, line, err)
			}
			preds = append(preds, p)
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("--predictions %s: %w", name, err)
		}
	}
	seen := map[string]bool{}
	for i, p := range preds {
		switch {
		case p.InstanceID == "":
			return nil, fmt.Errorf("--predictions %s: prediction %d has no instance_id", name, i+1)
		case seen[p.InstanceID]:
			return nil, fmt.Errorf("--predictions %s: instance %s is predicted twice", name, p.InstanceID)
		}
		seen[p.InstanceID] = true
	}
	if len(preds) == 0 {
		return nil, fmt.Errorf("--predictions %s: no prediction", name)
	}
	return preds, nil
}

// gradePredictions grades each prediction against the task of its instance id,
// o.parallel at once, and writes the report under o.out as eval does: one
// attempt per prediction.
func gradePredictions(ctx context.Context, svc env.Service, owner env.Owner, tasks []*task.Task, preds []prediction, gopts grade.Options, o *gradeOptions) error {
	byID := map[string]*task.Task{}
	for _, t := range tasks {
		byID[t.ID] = t
	}
	var unknown []string
	for _, p := range preds {
		if byID[p.InstanceID] == nil {
			unknown = append(unknown, p.InstanceID)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("--predictions: no task in --suite for %s (the suite has %d tasks)", strings.Join(unknown, ", "), len(tasks))
	}
	out := o.out
	if out == "" {
		out = filepath.Join("grade-results", time.Now().UTC().Format("20060102T150405Z"))
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	models := map[string]bool{}
	for _, p := range preds {
		models[p.Model] = true
	}
	r := &report.Report{Run: filepath.Base(out), Suite: o.suite.suite, Policy: "predictions:" + filepath.Base(o.predictions), Isolation: isolationValue{&o.isolation}.String(),
		Model: strings.Join(slices.Sorted(func(yield func(string) bool) {
			for m := range models {
				if !yield(m) {
					return
				}
			}
		}), ", "), StartedAt: time.Now().UTC()}
	attempts := make([]report.Attempt, len(preds))
	var wg sync.WaitGroup
	sem := make(chan struct{}, o.parallel)
	var mu sync.Mutex
	done := 0
	for i, p := range preds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			a := gradePrediction(ctx, svc, owner, byID[p.InstanceID], p, gopts, out)
			attempts[i] = a
			mu.Lock()
			done++
			fmt.Fprintf(stderr, "[%d/%d] %s %s in %s\n", done, len(preds), p.InstanceID, a.Outcome, time.Duration(a.DurationMS)*time.Millisecond)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	r.FinishedAt = time.Now().UTC()
	r.DurationMS = r.FinishedAt.Sub(r.StartedAt).Milliseconds()
	slices.SortFunc(attempts, func(a, b report.Attempt) int { return strings.Compare(a.Task, b.Task) })
	r.Attempts = attempts
	r.Summary = report.Summarize(attempts)
	if err := report.Write(out, r); err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	report.Table(stdout, r)
	fmt.Fprintf(stdout, "\nreport: %s\n", filepath.Join(out, "report.html"))
	if r.Summary.InfraErrors > 0 {
		return exitError{1}
	}
	return nil
}

// gradePrediction grades one prediction into out/INSTANCE/1.
func gradePrediction(ctx context.Context, svc env.Service, owner env.Owner, t *task.Task, p prediction, gopts grade.Options, out string) report.Attempt {
	rel := filepath.Join(t.ID, "1")
	dir := filepath.Join(out, rel)
	a := report.Attempt{Task: t.ID, Title: t.Title, Attempt: 1, Dir: rel, PatchBytes: len(p.Patch)}
	start := time.Now()
	defer func() {
		a.DurationMS = time.Since(start).Milliseconds()
		a.Outcome = report.Classify(a)
	}()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		a.Error = err.Error()
		return a
	}
	if err := os.WriteFile(filepath.Join(dir, "patch.diff"), []byte(p.Patch), 0o644); err != nil {
		a.Error = err.Error()
		return a
	}
	gopts.LogFile = filepath.Join(dir, "test.log")
	v, err := grade.Grade(ctx, svc, owner, t, []byte(p.Patch), gopts)
	if err != nil {
		a.Error = err.Error()
		return a
	}
	a.Verdict, a.Resolved, a.Tampered, a.InfraError, a.GradeMS = v, v.Resolved, v.Tampered, v.InfraError, v.DurationMS
	if data, err := json.MarshalIndent(v, "", "  "); err == nil {
		if err := os.WriteFile(filepath.Join(dir, "grade.json"), append(data, '\n'), 0o644); err != nil {
			a.Error = err.Error()
		}
	}
	return a
}
