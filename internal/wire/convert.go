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

// The conversions between env's types and the wire types of package client.

func seconds(s float64) (time.Duration, error) {
	if s < 0 || math.IsNaN(s) || s > float64(math.MaxInt64)/float64(time.Second) {
		return 0, BadRequest("a duration must be a non-negative number of seconds, got %v", s)
	}
	return time.Duration(s * float64(time.Second)), nil
}

// CreateOptions converts a create request; the owner is left to the Guard.
func CreateOptions(r client.CreateRequest) (env.CreateOptions, error) {
	ttl, err := seconds(r.TTLSeconds)
	if err != nil {
		return env.CreateOptions{}, err
	}
	idle, err := seconds(r.IdleSeconds)
	if err != nil {
		return env.CreateOptions{}, err
	}
	if r.Limits.MemoryBytes < 0 || r.Limits.Pids < 0 || r.Limits.CPUs < 0 || r.Limits.WorkspaceBytes < 0 {
		return env.CreateOptions{}, BadRequest("limits must not be negative")
	}
	return env.CreateOptions{
		Owner:     env.Owner{Task: r.Task},
		Workspace: r.Workspace,
		Template:  r.Template,
		Limits: env.Limits{Memory: r.Limits.MemoryBytes, Pids: r.Limits.Pids,
			CPUs: r.Limits.CPUs, WorkspaceSize: r.Limits.WorkspaceBytes},
		Network: r.Network,
		TTL:     ttl,
		Idle:    idle,
		Labels:  r.Labels,
	}, nil
}

// CreateRequest is the inverse of CreateOptions.
func CreateRequest(o env.CreateOptions) client.CreateRequest {
	return client.CreateRequest{
		Workspace: o.Workspace, Template: o.Template,
		Limits:     client.Limits{MemoryBytes: o.Limits.Memory, Pids: o.Limits.Pids, CPUs: o.Limits.CPUs, WorkspaceBytes: o.Limits.WorkspaceSize},
		Network:    o.Network,
		TTLSeconds: o.TTL.Seconds(), IdleSeconds: o.Idle.Seconds(),
		Labels: o.Labels, Task: o.Owner.Task,
	}
}

// Environment converts an env.Info.
func Environment(i env.Info) client.Environment {
	e := client.Environment{
		ID:        i.ID,
		Owner:     client.Owner{Tenant: i.Owner.Tenant, Task: i.Owner.Task},
		Labels:    i.Labels,
		Limits:    client.Limits{MemoryBytes: i.Limits.Memory, Pids: i.Limits.Pids, CPUs: i.Limits.CPUs, WorkspaceBytes: i.Limits.WorkspaceSize},
		Template:  i.Template,
		CreatedAt: i.CreatedAt,
		LastUsed:  i.LastUsed,
		State:     i.State,
	}
	if !i.ExpiresAt.IsZero() {
		t := i.ExpiresAt
		e.ExpiresAt = &t
	}
	return e
}

// Info is the inverse of Environment.
func Info(e client.Environment) env.Info {
	i := env.Info{
		ID: e.ID, Owner: env.Owner{Tenant: e.Owner.Tenant, Task: e.Owner.Task}, Labels: e.Labels,
		Limits:   env.Limits{Memory: e.Limits.MemoryBytes, Pids: e.Limits.Pids, CPUs: e.Limits.CPUs, WorkspaceSize: e.Limits.WorkspaceBytes},
		Template: e.Template, CreatedAt: e.CreatedAt, LastUsed: e.LastUsed, State: e.State,
	}
	if e.ExpiresAt != nil {
		i.ExpiresAt = *e.ExpiresAt
	}
	return i
}

// ExecRequest converts an exec request.
func ExecRequest(r client.ExecRequest) (env.ExecRequest, error) {
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
	return env.ExecRequest{Argv: r.Argv, Env: r.Env, Cwd: r.Cwd, Stdin: stdin, Timeout: t,
		OutputLimit: r.OutputLimit, OutputTotal: r.OutputTotal}, nil
}

// WireExecRequest is the inverse of ExecRequest.
func WireExecRequest(r env.ExecRequest) client.ExecRequest {
	return client.ExecRequest{Argv: r.Argv, Env: r.Env, Cwd: r.Cwd, Stdin: string(r.Stdin),
		TimeoutSeconds: r.Timeout.Seconds(), OutputLimit: r.OutputLimit, OutputTotal: r.OutputTotal}
}

// Result converts a runner.Result (nil stays nil).
func Result(r *runner.Result) *client.Result {
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
	}
}

// RunnerResult is the inverse of Result.
func RunnerResult(r *client.Result) *runner.Result {
	if r == nil {
		return nil
	}
	return &runner.Result{
		ExitCode: r.ExitCode, Signal: r.Signal, TimedOut: r.TimedOut, Cancelled: r.Cancelled,
		OOMKilled: r.OOMKilled, Limit: runner.Limit(r.Limit), Stdout: r.Stdout, Stderr: r.Stderr,
		StdoutTruncated: r.StdoutTruncated, StderrTruncated: r.StderrTruncated,
		StdoutBytes: r.StdoutBytes, StderrBytes: r.StderrBytes, StdoutRef: r.StdoutRef, StderrRef: r.StderrRef, DurationMS: r.DurationMS,
		CPUUserMS: r.CPUUserMS, CPUSysMS: r.CPUSysMS, MemoryPeakBytes: r.MemoryPeakBytes,
		Survivors: r.Survivors, Isolation: runner.Isolation(r.Isolation), LandlockABI: r.LandlockABI, Error: r.Error,
	}
}

// Event converts an env.Event.
func Event(e env.Event) client.Event {
	return client.Event{Seq: e.Seq, Kind: e.Kind, Data: e.Data, Result: Result(e.Result)}
}

// FileEntry converts a workspace.Entry.
func FileEntry(e workspace.Entry) client.FileEntry {
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

// Entry is the inverse of FileEntry (type bits other than dir and symlink are lost).
func Entry(e client.FileEntry) workspace.Entry {
	m := fs.FileMode(e.Mode) & fs.ModePerm
	switch e.Type {
	case client.TypeDir:
		m |= fs.ModeDir
	case client.TypeSymlink:
		m |= fs.ModeSymlink
	case client.TypeOther:
		m |= fs.ModeIrregular
	}
	return workspace.Entry{Path: e.Path, Name: e.Name, Mode: m, Size: e.Size, ModTime: e.ModTime,
		Links: e.Links, LinkTarget: e.LinkTarget}
}

// PatchReport converts a workspace.PatchReport.
func PatchReport(r workspace.PatchReport) client.PatchReport {
	out := client.PatchReport{Files: []client.PatchedFile{}}
	for _, f := range r.Files {
		out.Files = append(out.Files, client.PatchedFile{Op: string(f.Op), Path: f.Path, OldPath: f.OldPath, Added: f.Added, Deleted: f.Deleted})
	}
	return out
}

// WorkspacePatchReport is the inverse of PatchReport.
func WorkspacePatchReport(r client.PatchReport) workspace.PatchReport {
	var out workspace.PatchReport
	for _, f := range r.Files {
		out.Files = append(out.Files, workspace.PatchedFile{Op: workspace.PatchOp(f.Op), Path: f.Path, OldPath: f.OldPath, Added: f.Added, Deleted: f.Deleted})
	}
	return out
}

// Artifact converts an env.Artifact.
func Artifact(a env.Artifact) client.Artifact {
	return client.Artifact{Ref: a.Ref, Size: a.Size, Owner: client.Owner{Tenant: a.Owner.Tenant, Task: a.Owner.Task},
		Name: a.Name, EnvID: a.EnvID, Source: a.Source}
}

// EnvArtifact is the inverse of Artifact.
func EnvArtifact(a client.Artifact) env.Artifact {
	return env.Artifact{Ref: a.Ref, Size: a.Size, Owner: env.Owner{Tenant: a.Owner.Tenant, Task: a.Owner.Task},
		Name: a.Name, EnvID: a.EnvID, Source: a.Source}
}
