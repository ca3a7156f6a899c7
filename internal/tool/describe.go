package tool

import (
	"context"
	"encoding/json"
	"path"

	"github.com/agentbox/agentbox/internal/command"
	"github.com/agentbox/agentbox/internal/policy"
	"github.com/agentbox/agentbox/internal/workspace"
)

// The built-in tools' Describe functions: what each call reads, writes and runs,
// as the gate judges it. Paths are the call's own, relative to the workspace root
// (the policy refuses one that leaves it).
// Workspace.resolving (resolve.go) adds the target of each path that is or
// passes through a symlink.

func describeWith[T any](f func(T) policy.Action) Describe {
	return func(_ context.Context, raw json.RawMessage) (policy.Action, error) {
		var a T
		if err := decode(raw, &a); err != nil {
			return policy.Action{}, err
		}
		return f(a), nil
	}
}

func rootOr(p string) string {
	if p == "" {
		return "."
	}
	return p
}

var (
	describeRead   = describeWith(func(a readArgs) policy.Action { return policy.Action{Reads: []string{a.Path}} })
	describeList   = describeWith(func(a listArgs) policy.Action { return policy.Action{Reads: []string{rootOr(a.Path)}} })
	describeSearch = describeWith(func(a searchArgs) policy.Action { return policy.Action{Reads: []string{rootOr(a.Path)}} })
	describeWrite  = describeWith(func(a writeArgs) policy.Action { return policy.Action{Writes: []string{a.Path}} })
	describePatch  = describeWith(patchAction)
)

// patchAction: str_replace writes its path; a diff writes every file it names
// as the workspace will read them (old and new names of a rename) and deletes
// the ones it removes. A diff whose files cannot be read is judged as a write of
// the whole tree.
func patchAction(a patchArgs) policy.Action {
	if a.Patch == "" {
		return policy.Action{Writes: []string{a.Path}}
	}
	paths, deletes, err := workspace.PatchFiles([]byte(a.Patch))
	if err != nil || len(paths) == 0 {
		return policy.Action{Writes: []string{"."}}
	}
	return policy.Action{Writes: paths, Deletes: deletes}
}

// describeRemove: fs.remove writes and deletes its path; a directory goes with
// everything below it, so it is judged as a write of that tree ("dir/**"). A
// path that cannot be stat'ed is judged as one file (the handler then fails).
func (w *Workspace) describeRemove(ctx context.Context, raw json.RawMessage) (policy.Action, error) {
	var a removeArgs
	if err := decode(raw, &a); err != nil {
		return policy.Action{}, err
	}
	p := a.Path
	if e, err := w.o.Service.Stat(ctx, w.o.Owner, w.o.EnvID, a.Path); err == nil && e.Mode.IsDir() {
		if c, ok := policy.CleanPath(a.Path); ok {
			p = path.Join(c, "**")
		}
	}
	return policy.Action{Writes: []string{p}, Deletes: 1}, nil
}

// describeExec: the command line exec.run runs, through sh -c when given as
// command; Network if the sandbox can reach some host.
func (w *Workspace) describeExec(_ context.Context, raw json.RawMessage) (policy.Action, error) {
	var a execArgs
	if err := decode(raw, &a); err != nil {
		return policy.Action{}, err
	}
	var l command.Line
	if a.Command != "" {
		l = command.ParseShell(a.Command)
	} else {
		l = command.Parse(a.Argv)
	}
	return policy.Action{Command: &l, Network: w.o.Network}, nil
}

// describeTest: the operator's test command.
func (w *Workspace) describeTest(context.Context, json.RawMessage) (policy.Action, error) {
	l := command.Parse(w.o.TestCommand)
	return policy.Action{Command: &l, Network: w.o.Network}, nil
}
