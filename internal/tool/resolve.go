package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/agentbox/agentbox/internal/policy"
	"github.com/agentbox/agentbox/internal/workspace"
)

// maxLinkHops bounds the symlinks one path resolution follows, as the kernel's
// ELOOP limit does.
const maxLinkHops = 40

// resolving wraps a file tool's Describe so the gate judges each path as the
// workspace will reach it, not only by the name the call gave: the workspace's
// reads follow symlinks that stay inside it, and every operation follows
// symlinked parent directories, so "notes.txt" may be a link to .env and
// "cfg/hooks/pre-commit" a write under .git. Each path whose target differs is
// judged twice, by its name and by its target, and both must pass; a target
// outside the workspace is named as such, which the policy refuses. Reads follow
// the last name; writes and deletes replace the entry itself (a link is replaced,
// never written through), so only their parents are resolved.
//
// The targets are read with Stat, one per name, before the call runs: a link
// changed in between (by a process the session left running) is judged as it was.
// The content taint of what a read returns still applies after.
func (w *Workspace) resolving(d Describe) Describe {
	return func(ctx context.Context, raw json.RawMessage) (policy.Action, error) {
		a, err := d(ctx, raw)
		if err != nil {
			return a, err
		}
		if a.Reads, err = w.withTargets(ctx, a.Reads, true); err != nil {
			return a, err
		}
		a.Writes, err = w.withTargets(ctx, a.Writes, false)
		return a, err
	}
}

// withTargets returns paths with the target of each that resolves elsewhere
// added after it.
func (w *Workspace) withTargets(ctx context.Context, paths []string, followLast bool) ([]string, error) {
	stat := func(p string) (workspace.Entry, error) { return w.o.Service.Stat(ctx, w.o.Owner, w.o.EnvID, p) }
	out := paths
	for _, p := range paths {
		clean, ok := policy.CleanPath(p)
		if !ok {
			continue // refused by the policy as it is
		}
		var t string
		var err error
		if followLast || clean == "." {
			t, err = resolveLinks(stat, clean)
		} else {
			dir, base := path.Split(clean)
			if t, err = resolveLinks(stat, strings.TrimSuffix(dir, "/")); err == nil {
				t = path.Join(t, base)
			}
		}
		if err != nil {
			return nil, Errorf(EINVAL, false, ActFixArgs, "%s: %v", p, err)
		}
		if t != clean && !slices.Contains(out, t) {
			if len(out) == len(paths) {
				out = slices.Clone(paths)
			}
			out = append(out, t)
		}
	}
	return out, nil
}

// resolveLinks returns the workspace path p (clean, relative, "" or "." for the
// root) reaches once every symlink on the way is followed, with stat describing
// an entry without following it (workspace.Root.Stat). A name that does not exist
// (or whose parent is not a directory) ends the resolution: the rest is taken as
// written. A target that leaves the workspace comes back absolute (its text, or
// "/.." for a relative climb out), which policy.CleanPath refuses.
func resolveLinks(stat func(string) (workspace.Entry, error), p string) (string, error) {
	if p == "" || p == "." {
		return ".", nil
	}
	todo := strings.Split(p, "/")
	cur := "" // resolved so far: no symlink in it
	for hops := 0; len(todo) > 0; {
		name := todo[0]
		todo = todo[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			if cur == "" {
				return "/..", nil
			}
			cur = strings.TrimSuffix(path.Dir(cur), ".")
			continue
		}
		next := path.Join(cur, name)
		e, err := stat(next)
		if err != nil {
			// Nothing there to follow: the rest cannot be a link today.
			return path.Join(append([]string{next}, todo...)...), nil
		}
		if e.Mode&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if hops++; hops > maxLinkHops {
			return "", fmt.Errorf("more than %d symlinks on the way", maxLinkHops)
		}
		target := e.LinkTarget
		if strings.HasPrefix(target, "/") {
			rest, ok := strings.CutPrefix(target, policy.WorkspaceRoot)
			if !ok || rest != "" && rest[0] != '/' {
				return target, nil
			}
			target, cur = strings.TrimPrefix(rest, "/"), ""
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	if cur == "" {
		return ".", nil
	}
	return cur, nil
}
