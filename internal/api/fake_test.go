package api

// memService is a test double for the edge: an in-memory env.Service that behaves
// like env.Manager where the API's mapping depends on it (tenant isolation, sentinel
// errors, event sequence numbers and resumption) and nothing more. End-to-end tests
// use the real env.Manager.

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/runner"
	"github.com/agentbox/agentbox/internal/workspace"
)

type memService struct {
	mu        sync.Mutex
	n         int
	envs      map[string]*memEnv
	artifacts map[string]env.Artifact
	blobs     map[string][]byte
	execDelay time.Duration // how long a synchronous exec takes
	lastExec  env.ExecRequest
	// execHold, if set, holds every synchronous exec until it is closed; each
	// exec says on execHeld that it is held.
	execHold, execHeld chan struct{}
}

type memEnv struct {
	info  env.Info
	net   []egress.Event // NetworkLog's answer
	files map[string][]byte
	dirs  map[string]bool
	procs map[string]*memProc
}

type memProc struct {
	mu      sync.Mutex
	events  []env.Event
	changed chan struct{} // closed and replaced on every new event
	stdin   bytes.Buffer
	done    bool
}

func newMem() *memService {
	return &memService{envs: map[string]*memEnv{}, artifacts: map[string]env.Artifact{}, blobs: map[string][]byte{}}
}

const memReadCap = 512 << 10

func (m *memService) env(o env.Owner, id string) (*memEnv, error) {
	e, ok := m.envs[id]
	if !ok || e.info.Owner.Tenant != o.Tenant {
		return nil, fmt.Errorf("env %s (tenant %s): %w", id, o.Tenant, env.ErrNotFound)
	}
	return e, nil
}

func (m *memService) Create(_ context.Context, o env.CreateOptions) (env.Info, error) {
	if (o.Workspace == "") == (o.Preset == "") {
		return env.Info{}, fmt.Errorf("%w: exactly one of workspace and workspace preset", env.ErrInvalid)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n++
	id := fmt.Sprintf("env-%d", m.n)
	now := time.Now().UTC()
	e := &memEnv{info: env.Info{ID: id, Owner: o.Owner, Labels: o.Labels, Limits: o.Limits, Preset: o.Preset, Template: o.Template,
		CreatedAt: now, LastUsed: now, State: "running", Network: o.Network},
		files: map[string][]byte{}, dirs: map[string]bool{}, procs: map[string]*memProc{}}
	if o.TTL > 0 {
		e.info.ExpiresAt = now.Add(o.TTL)
	}
	m.envs[id] = e
	return e.info, nil
}

func (m *memService) Get(_ context.Context, o env.Owner, id string) (env.Info, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.env(o, id)
	if err != nil {
		return env.Info{}, err
	}
	return e.info, nil
}

func (m *memService) List(_ context.Context, o env.Owner, labels map[string]string) ([]env.Info, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []env.Info
outer:
	for _, e := range m.envs {
		if e.info.Owner.Tenant != o.Tenant {
			continue
		}
		for k, v := range labels {
			if e.info.Labels[k] != v {
				continue outer
			}
		}
		out = append(out, e.info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Snapshot names the files as they are; Fork copies them into new
// environments of the same owner and labels.
func (m *memService) Snapshot(_ context.Context, o env.Owner, id string) (env.Snapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.env(o, id)
	if err != nil {
		return env.Snapshot{}, err
	}
	m.n++
	e.info.Snapshot = fmt.Sprintf("snap-%d", m.n)
	return env.Snapshot{ID: e.info.Snapshot, EnvID: id, Owner: e.info.Owner, CreatedAt: time.Now().UTC(), Depth: 1}, nil
}

func (m *memService) Fork(ctx context.Context, o env.Owner, id string, fo env.ForkOptions) ([]env.Info, error) {
	if fo.Count < 1 || fo.Count > env.MaxFork {
		return nil, fmt.Errorf("%w: fork count %d: 1 to %d", env.ErrInvalid, fo.Count, env.MaxFork)
	}
	if _, err := m.Snapshot(ctx, o, id); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	src := m.envs[id]
	var out []env.Info
	for range fo.Count {
		m.n++
		c := &memEnv{info: src.info, files: maps.Clone(src.files), dirs: maps.Clone(src.dirs), procs: map[string]*memProc{}}
		c.info.ID = fmt.Sprintf("env-%d", m.n)
		m.envs[c.info.ID] = c
		out = append(out, c.info)
	}
	return out, nil
}

// Pause and Resume only change the state; Exec and Start refuse a paused one.
func (m *memService) Pause(_ context.Context, o env.Owner, id string, po env.PauseOptions) (env.Info, error) {
	return m.setState(o, id, env.StatePaused, po.ToDisk)
}

func (m *memService) Resume(_ context.Context, o env.Owner, id string) (env.Info, error) {
	return m.setState(o, id, env.StateRunning, false)
}

func (m *memService) setState(o env.Owner, id, state string, toDisk bool) (env.Info, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.env(o, id)
	if err != nil {
		return env.Info{}, err
	}
	e.info.State, e.info.PausedToDisk = state, toDisk
	return e.info, nil
}

func (m *memService) paused(o env.Owner, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, err := m.env(o, id); err == nil && e.info.State == env.StatePaused {
		return fmt.Errorf("environment %s: %w", id, env.ErrPaused)
	}
	return nil
}

func (m *memService) Destroy(_ context.Context, o env.Owner, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.envs[id]
	if !ok {
		return nil // idempotent
	}
	if e.info.Owner.Tenant != o.Tenant {
		return fmt.Errorf("env %s: %w", id, env.ErrNotFound)
	}
	for _, p := range e.procs {
		p.finish(&runner.Result{ExitCode: 137, Cancelled: true})
	}
	delete(m.envs, id)
	return nil
}

// run interprets the few commands the tests use.
func run(argv []string, stdin []byte) *runner.Result {
	switch argv[0] {
	case "echo":
		return &runner.Result{Stdout: strings.Join(argv[1:], " ") + "\n"}
	case "cat":
		return &runner.Result{Stdout: string(stdin)}
	case "fail":
		return &runner.Result{ExitCode: 3, Stderr: "failed\n"}
	case "timeout":
		return &runner.Result{ExitCode: 124, TimedOut: true, Limit: runner.LimitTimeout}
	}
	return &runner.Result{ExitCode: 127, Error: "not found"}
}

func (m *memService) Exec(ctx context.Context, o env.Owner, id string, r env.ExecRequest) (*runner.Result, error) {
	if err := m.paused(o, id); err != nil {
		return nil, err
	}
	m.mu.Lock()
	_, err := m.env(o, id)
	d := m.execDelay
	m.lastExec = r
	hold, held := m.execHold, m.execHeld
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if hold != nil {
		held <- struct{}{}
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return run(r.Argv, r.Stdin), nil
}

func (p *memProc) emit(kind string, data []byte, res *runner.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return
	}
	p.events = append(p.events, env.Event{Seq: int64(len(p.events) + 1), Kind: kind, Data: data, Result: res})
	if kind == "exit" {
		p.done = true
	}
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *memProc) finish(res *runner.Result) { p.emit("exit", nil, res) }

// Start runs "count N DELAY" (N stdout lines, DELAY between them), "stdin" (echoes
// stdin at EOF) or any run() command, in the background.
func (m *memService) Start(_ context.Context, o env.Owner, id string, r env.ExecRequest) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.env(o, id)
	if err != nil {
		return "", err
	}
	m.lastExec = r
	p := &memProc{changed: make(chan struct{})}
	pid := "p" + strconv.Itoa(len(e.procs)+1)
	e.procs[pid] = p
	switch r.Argv[0] {
	case "count":
		n, _ := strconv.Atoi(r.Argv[1])
		delay, _ := time.ParseDuration(r.Argv[2])
		go func() {
			for i := 1; i <= n; i++ {
				p.emit("stdout", []byte(fmt.Sprintf("line %d\n", i)), nil)
				time.Sleep(delay)
			}
			p.finish(&runner.Result{StdoutBytes: int64(n)})
		}()
	case "stdin", "sleep":
	default:
		res := run(r.Argv, nil)
		p.emit("stdout", []byte(res.Stdout), nil)
		p.finish(res)
	}
	return pid, nil
}

func (m *memService) proc(o env.Owner, id, pid string) (*memProc, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.env(o, id)
	if err != nil {
		return nil, err
	}
	p, ok := e.procs[pid]
	if !ok {
		return nil, fmt.Errorf("process %s: %w", pid, env.ErrNotFound)
	}
	return p, nil
}

func (m *memService) Wait(ctx context.Context, o env.Owner, id, pid string) (*runner.Result, error) {
	ch, err := m.Events(ctx, o, id, pid, 0)
	if err != nil {
		return nil, err
	}
	for ev := range ch {
		if ev.Kind == "exit" {
			return ev.Result, nil
		}
	}
	return nil, ctx.Err()
}

func (m *memService) Events(ctx context.Context, o env.Owner, id, pid string, after int64) (<-chan env.Event, error) {
	p, err := m.proc(o, id, pid)
	if err != nil {
		return nil, err
	}
	ch := make(chan env.Event, 16)
	go func() {
		defer close(ch)
		next := after
		for {
			p.mu.Lock()
			evs := append([]env.Event(nil), p.events[min(int(next), len(p.events)):]...)
			changed := p.changed
			p.mu.Unlock()
			for _, ev := range evs {
				select {
				case ch <- ev:
				case <-ctx.Done():
					return
				}
				next = ev.Seq
				if ev.Kind == "exit" {
					return
				}
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch, nil
}

func (m *memService) WriteStdin(_ context.Context, o env.Owner, id, pid string, data []byte, eof bool) error {
	p, err := m.proc(o, id, pid)
	if err != nil {
		return err
	}
	p.mu.Lock()
	if p.done {
		p.mu.Unlock()
		return fmt.Errorf("%w: process has exited", env.ErrInvalid)
	}
	p.stdin.Write(data)
	in := p.stdin.String()
	p.mu.Unlock()
	if eof {
		p.emit("stdout", []byte(in), nil)
		p.finish(&runner.Result{Stdout: in})
	}
	return nil
}

func (m *memService) Signal(_ context.Context, o env.Owner, id, pid string, sig string) error {
	p, err := m.proc(o, id, pid)
	if err != nil {
		return err
	}
	if sig != "TERM" && sig != "KILL" && sig != "INT" {
		return fmt.Errorf("%w: unknown signal %q", env.ErrInvalid, sig)
	}
	s := "SIG" + sig
	p.finish(&runner.Result{ExitCode: 128 + 15, Signal: &s})
	return nil
}

// Resize: no process of the double has a terminal.
func (m *memService) Resize(_ context.Context, o env.Owner, id, pid string, _ runner.TTY) error {
	if _, err := m.proc(o, id, pid); err != nil {
		return err
	}
	return fmt.Errorf("%w: the command has no terminal", env.ErrInvalid)
}

// files

func clean(p string) (string, error) {
	switch {
	case strings.HasPrefix(p, "/") || p == ".." || strings.HasPrefix(p, "../") || strings.Contains(p, "/../"):
		return "", fmt.Errorf("%s: %w", p, workspace.ErrEscape)
	case p == "boom":
		// An internal failure whose text names a host path: must not reach callers.
		return "", errors.New("open /var/lib/agentbox-test/envs/secret/upper/boom: input/output error")
	}
	return strings.TrimPrefix(p, "./"), nil
}

func (m *memService) fileOp(o env.Owner, id, p string) (*memEnv, string, error) {
	e, err := m.env(o, id)
	if err != nil {
		return nil, "", err
	}
	c, err := clean(p)
	return e, c, err
}

func (m *memService) ReadFile(_ context.Context, o env.Owner, id, path string, offset, length int64) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, p, err := m.fileOp(o, id, path)
	if err != nil {
		return nil, err
	}
	b, ok := e.files[p]
	if !ok {
		return nil, &fs.PathError{Op: "read", Path: p, Err: fs.ErrNotExist}
	}
	if offset > int64(len(b)) {
		offset = int64(len(b))
	}
	b = b[offset:]
	if length == 0 && len(b) > memReadCap {
		return nil, &workspace.TooLargeError{Path: p, Size: int64(len(e.files[p])), Limit: memReadCap}
	}
	if length > 0 && length < int64(len(b)) {
		b = b[:length]
	}
	return bytes.Clone(b), nil
}

func (m *memService) WriteFile(_ context.Context, o env.Owner, id, path string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, p, err := m.fileOp(o, id, path)
	if err != nil {
		return err
	}
	e.files[p] = bytes.Clone(data)
	return nil
}

func (m *memService) ListDir(_ context.Context, o env.Owner, id, path string) ([]workspace.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, _, err := m.fileOp(o, id, path)
	if err != nil {
		return nil, err
	}
	var out []workspace.Entry
	for p, b := range e.files {
		out = append(out, workspace.Entry{Path: p, Name: p, Mode: 0o644, Size: int64(len(b)), Links: 1})
	}
	for d := range e.dirs {
		out = append(out, workspace.Entry{Path: d, Name: d, Mode: fs.ModeDir | 0o755})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (m *memService) Stat(_ context.Context, o env.Owner, id, path string) (workspace.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, p, err := m.fileOp(o, id, path)
	if err != nil {
		return workspace.Entry{}, err
	}
	if b, ok := e.files[p]; ok {
		return workspace.Entry{Path: p, Name: p, Mode: 0o644, Size: int64(len(b)), Links: 1}, nil
	}
	if e.dirs[p] {
		return workspace.Entry{Path: p, Name: p, Mode: fs.ModeDir | 0o755}, nil
	}
	return workspace.Entry{}, &fs.PathError{Op: "stat", Path: p, Err: fs.ErrNotExist}
}

func (m *memService) Remove(_ context.Context, o env.Owner, id, path string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, p, err := m.fileOp(o, id, path)
	if err != nil {
		return err
	}
	if _, ok := e.files[p]; !ok && !e.dirs[p] {
		return &fs.PathError{Op: "remove", Path: p, Err: fs.ErrNotExist}
	}
	delete(e.files, p)
	delete(e.dirs, p)
	return nil
}

func (m *memService) Mkdir(_ context.Context, o env.Owner, id, path string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, p, err := m.fileOp(o, id, path)
	if err != nil {
		return err
	}
	e.dirs[p] = true
	return nil
}

func (m *memService) Download(_ context.Context, o env.Owner, id, path string, w io.Writer) error {
	m.mu.Lock()
	e, _, err := m.fileOp(o, id, path)
	var names []string
	var files map[string][]byte
	if err == nil {
		files = map[string][]byte{}
		for p, b := range e.files {
			names = append(names, p)
			files[p] = b
		}
	}
	m.mu.Unlock()
	if err != nil {
		return err
	}
	sort.Strings(names)
	tw := tar.NewWriter(w)
	for _, n := range names {
		if n == "unreadable" {
			tw.Flush()
			return &fs.PathError{Op: "tar", Path: n, Err: fs.ErrPermission}
		}
		tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n]))})
		tw.Write(files[n])
	}
	return tw.Close()
}

func (m *memService) Upload(_ context.Context, o env.Owner, id, path string, r io.Reader) error {
	tr := tar.NewReader(r)
	got := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		got[h.Name] = b
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e, _, err := m.fileOp(o, id, path)
	if err != nil {
		return err
	}
	for n, b := range got {
		e.files[n] = b
	}
	return nil
}

func (m *memService) ApplyPatch(_ context.Context, o env.Owner, id string, patch []byte) (workspace.PatchReport, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.env(o, id); err != nil {
		return workspace.PatchReport{}, err
	}
	if bytes.Contains(patch, []byte("BAD")) {
		return workspace.PatchReport{}, &workspace.PatchError{Path: "a.txt", Hunk: 2, Header: "@@ -3,2 +3,2 @@", Line: 3, Err: errors.New("context does not match")}
	}
	return workspace.PatchReport{Files: []workspace.PatchedFile{{Op: workspace.PatchModify, Path: "a.txt", Added: 1, Deleted: 1}}}, nil
}

func (m *memService) StrReplace(_ context.Context, o env.Owner, id, path, old, new string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, p, err := m.fileOp(o, id, path)
	if err != nil {
		return err
	}
	s := string(e.files[p])
	switch n := strings.Count(s, old); n {
	case 0:
		return fmt.Errorf("%s: %w", p, workspace.ErrNoMatch)
	case 1:
		e.files[p] = []byte(strings.Replace(s, old, new, 1))
		return nil
	default:
		return &workspace.AmbiguousError{Path: p, Count: n}
	}
}

func (m *memService) Diff(_ context.Context, o env.Owner, id string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.env(o, id)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	for p := range e.files {
		fmt.Fprintf(&b, "diff --git a/%s b/%s\n", p, p)
	}
	return []byte(b.String()), nil
}

func (m *memService) Export(_ context.Context, o env.Owner, id, path string) (env.Artifact, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, p, err := m.fileOp(o, id, path)
	if err != nil {
		return env.Artifact{}, err
	}
	b, ok := e.files[p]
	if !ok {
		return env.Artifact{}, &fs.PathError{Op: "export", Path: p, Err: fs.ErrNotExist}
	}
	sum := sha256.Sum256(b)
	ref := "sha256:" + hex.EncodeToString(sum[:])
	a := env.Artifact{Ref: ref, Size: int64(len(b)), Owner: o, Name: p, EnvID: id, Source: "file:" + p}
	m.artifacts[o.Tenant+"/"+ref] = a
	m.blobs[ref] = bytes.Clone(b)
	return a, nil
}

func (m *memService) ReadArtifact(_ context.Context, o env.Owner, ref string, offset, length int64) ([]byte, env.Artifact, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.artifacts[o.Tenant+"/"+ref]
	if !ok {
		return nil, env.Artifact{}, fmt.Errorf("artifact %s: %w", ref, env.ErrNotFound)
	}
	b := m.blobs[ref][min(offset, int64(len(m.blobs[ref]))):]
	if length > 0 && length < int64(len(b)) {
		b = b[:length]
	}
	return bytes.Clone(b), a, nil
}

func (m *memService) SetNetwork(_ context.Context, o env.Owner, id string, n env.Network) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.env(o, id)
	if err != nil {
		return err
	}
	if e.info.Network == nil {
		return fmt.Errorf("%w: no network", env.ErrInvalid)
	}
	e.info.Network = &n
	return nil
}

func (m *memService) NetworkLog(_ context.Context, o env.Owner, id string, after uint64) ([]egress.Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.env(o, id)
	if err != nil {
		return nil, err
	}
	var out []egress.Event
	for _, ev := range e.net {
		if ev.Seq > after {
			out = append(out, ev)
		}
	}
	return out, nil
}

func (m *memService) NetworkEvents(ctx context.Context, o env.Owner, id string, after uint64) (<-chan egress.Event, error) {
	evs, err := m.NetworkLog(ctx, o, id, after)
	if err != nil {
		return nil, err
	}
	ch := make(chan egress.Event, len(evs))
	for _, e := range evs {
		ch <- e
	}
	go func() {
		<-ctx.Done()
		close(ch)
	}()
	return ch, nil
}
