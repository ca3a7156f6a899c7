package wire

import (
	"io/fs"
	"math"
	"time"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/runner"
	"github.com/agentbox/agentbox/internal/workspace"
)

// The conversions of Service, one per shape: a request from the wire to env's
// types, an answer from env's (or runner's, or workspace's) to the wire.

func seconds(s float64) (time.Duration, error) {
	if s < 0 || math.IsNaN(s) || s > float64(math.MaxInt64)/float64(time.Second) {
		return 0, BadRequest("a duration must be a non-negative number of seconds, got %v", s)
	}
	return time.Duration(s * float64(time.Second)), nil
}

// createOptions converts a create request; the owner is left to the Guard.
func createOptions(r client.CreateRequest) (env.CreateOptions, error) {
	ttl, err := seconds(r.TTLSeconds)
	if err != nil {
		return env.CreateOptions{}, err
	}
	idle, err := seconds(r.IdleSeconds)
	if err != nil {
		return env.CreateOptions{}, err
	}
	idlePause, err := seconds(r.IdlePauseSeconds)
	if err != nil {
		return env.CreateOptions{}, err
	}
	if r.Limits.MemoryBytes < 0 || r.Limits.Pids < 0 || r.Limits.CPUs < 0 || r.Limits.WorkspaceBytes < 0 {
		return env.CreateOptions{}, BadRequest("limits must not be negative")
	}
	n, err := network(r.Network)
	if err != nil {
		return env.CreateOptions{}, err
	}
	var mounts []env.Mount
	for _, m := range r.Mounts {
		mounts = append(mounts, env.Mount{Source: m.Source, Target: m.Target, Mode: env.MountMode(m.Mode)})
	}
	return env.CreateOptions{
		Mounts:    mounts,
		Owner:     env.Owner{Task: r.Task},
		Workspace: r.Workspace,
		Preset:    r.Preset,
		Template:  r.Template,
		Isolation: runner.Isolation(r.Isolation),
		Limits: env.Limits{Memory: r.Limits.MemoryBytes, Pids: r.Limits.Pids,
			CPUs: r.Limits.CPUs, WorkspaceSize: r.Limits.WorkspaceBytes},
		Network:   n,
		TTL:       ttl,
		Idle:      idle,
		IdlePause: idlePause,
		OnTimeout: r.OnTimeout,
		Labels:    r.Labels,
		Layer:     r.Layer,
	}, nil
}

func environment(i env.Info) client.Environment {
	e := client.Environment{
		ID:        i.ID,
		Owner:     owner(i.Owner),
		Labels:    i.Labels,
		Limits:    client.Limits{MemoryBytes: i.Limits.Memory, Pids: i.Limits.Pids, CPUs: i.Limits.CPUs, WorkspaceBytes: i.Limits.WorkspaceSize},
		Preset:    i.Preset,
		Template:  i.Template,
		Isolation: string(i.Isolation),
		Mounts:    mounts(i.Mounts),
		CreatedAt: i.CreatedAt,
		LastUsed:  i.LastUsed,
		State:     i.State,
		OnTimeout: i.OnTimeout,
		Network:   wireNetwork(i.Network),
		Snapshot:  i.Snapshot,
		Layer:     i.Layer,

		PausedToDisk: i.PausedToDisk,
	}
	if !i.ExpiresAt.IsZero() {
		t := i.ExpiresAt
		e.ExpiresAt = &t
	}
	if !i.PausedAt.IsZero() {
		t := i.PausedAt
		e.PausedAt = &t
	}
	return e
}

// mounts converts an environment's mounts, which name no host path (env.Info).
func mounts(ms []env.Mount) []client.Mount {
	var out []client.Mount
	for _, m := range ms {
		out = append(out, client.Mount{Source: m.Source, Target: m.Target, Mode: string(m.Mode)})
	}
	return out
}

func owner(o env.Owner) client.Owner { return client.Owner{Tenant: o.Tenant, Task: o.Task} }

func execRequest(r client.ExecRequest) (env.ExecRequest, error) {
	if len(r.Argv) == 0 {
		return env.ExecRequest{}, BadRequest("argv is empty: give the program and its arguments")
	}
	t, err := seconds(r.TimeoutSeconds)
	if err != nil {
		return env.ExecRequest{}, err
	}
	if r.OutputLimit < 0 || r.OutputTotal < 0 {
		return env.ExecRequest{}, BadRequest("output limits must not be negative")
	}
	var stdin []byte
	if r.Stdin != "" {
		stdin = []byte(r.Stdin)
	}
	var tty *runner.TTY
	switch {
	case r.TTY:
		rows, cols := r.Rows, r.Cols
		if rows == 0 {
			rows = 24
		}
		if cols == 0 {
			cols = 80
		}
		size, err := terminalSize(rows, cols)
		if err != nil {
			return env.ExecRequest{}, err
		}
		tty = &size
	case r.Rows != 0 || r.Cols != 0:
		return env.ExecRequest{}, BadRequest("rows and cols size a terminal: set tty too")
	}
	return env.ExecRequest{Argv: r.Argv, Env: r.Env, Cwd: r.Cwd, Stdin: stdin, Timeout: t,
		OutputLimit: r.OutputLimit, OutputTotal: r.OutputTotal, TTY: tty}, nil
}

// maxTerminal bounds a terminal's rows and columns.
const maxTerminal = 10000

func terminalSize(rows, cols int) (runner.TTY, error) {
	if rows < 1 || cols < 1 || rows > maxTerminal || cols > maxTerminal {
		return runner.TTY{}, BadRequest("terminal size %d rows by %d cols: each must be 1 to %d", rows, cols, maxTerminal)
	}
	return runner.TTY{Rows: uint16(rows), Cols: uint16(cols)}, nil
}

// result converts a runner.Result (nil stays nil).
func result(r *runner.Result) *client.Result {
	if r == nil {
		return nil
	}
	return &client.Result{
		ExitCode: r.ExitCode, Signal: r.Signal, TimedOut: r.TimedOut, Cancelled: r.Cancelled,
		OOMKilled: r.OOMKilled, Limit: string(r.Limit), Stdout: r.Stdout, Stderr: r.Stderr,
		StdoutTruncated: r.StdoutTruncated, StderrTruncated: r.StderrTruncated,
		StdoutBytes: r.StdoutBytes, StderrBytes: r.StderrBytes, StdoutRef: r.StdoutRef, StderrRef: r.StderrRef, DurationMS: r.DurationMS,
		CPUUserMS: r.CPUUserMS, CPUSysMS: r.CPUSysMS, MemoryPeakBytes: r.MemoryPeakBytes,
		Survivors: r.Survivors, Isolation: string(r.Isolation), LandlockABI: r.LandlockABI, Error: r.Error,
		Network: networkEvents(r.Network),
	}
}

func event(e env.Event) client.Event {
	return client.Event{Seq: e.Seq, Kind: e.Kind, Data: e.Data, Result: result(e.Result)}
}

func fileEntry(e workspace.Entry) client.FileEntry {
	t := client.TypeOther
	switch {
	case e.Mode.IsRegular():
		t = client.TypeFile
	case e.Mode.IsDir():
		t = client.TypeDir
	case e.Mode&fs.ModeSymlink != 0:
		t = client.TypeSymlink
	}
	return client.FileEntry{Path: e.Path, Name: e.Name, Type: t, Mode: uint32(e.Mode.Perm()),
		Size: e.Size, ModTime: e.ModTime, Links: e.Links, LinkTarget: e.LinkTarget}
}

func patchReport(r workspace.PatchReport) client.PatchReport {
	out := client.PatchReport{Files: []client.PatchedFile{}}
	for _, f := range r.Files {
		out.Files = append(out.Files, client.PatchedFile{Op: string(f.Op), Path: f.Path, OldPath: f.OldPath, Added: f.Added, Deleted: f.Deleted})
	}
	return out
}

func artifact(a env.Artifact) client.Artifact {
	return client.Artifact{Ref: a.Ref, Size: a.Size, Owner: owner(a.Owner), Name: a.Name, EnvID: a.EnvID, Source: a.Source}
}
