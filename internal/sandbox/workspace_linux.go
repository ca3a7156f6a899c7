package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
)

// forcePaths makes a root Start pass host directories by path, as an unprivileged
// Start does, so tests on a root-only host cover that path too.
var forcePaths bool

// prepareWorkspace decides what the init mounts at /workspace and passes it the host
// directories it needs (add returns a file's descriptor number in the init).
//
// As root the sandbox's host uid is a stranger to the workspace: the workspace is
// handed over as a detached, idmapped mount tree (its owner appears as the sandbox
// user), and the upper layer as a detached tree too, so no path is resolved by the
// sandbox's uid. As an unprivileged user the sandbox's uid is the caller's own, which
// can reach both paths, and open_tree would need privilege: the init binds the paths.
func (s *Sandbox) prepareWorkspace(add func(*os.File) int) (nsinit.Workspace, error) {
	cfg := &s.cfg
	if len(cfg.Layers) > 0 && (cfg.Workspace == "" || cfg.WorkspaceWrite) {
		return nsinit.Workspace{}, errors.New("sandbox: workspace layers need an overlay workspace (a Workspace, without WorkspaceWrite)")
	}
	if cfg.Workspace == "" {
		return nsinit.Workspace{Mode: nsinit.WorkspaceTmpfs, Size: cfg.WorkspaceSize}, nil
	}
	ws, err := filepath.Abs(cfg.Workspace)
	if err != nil {
		return nsinit.Workspace{}, fmt.Errorf("workspace: %w", err)
	}
	fi, err := os.Stat(ws)
	if err != nil {
		return nsinit.Workspace{}, fmt.Errorf("workspace: %w", err)
	}
	if !fi.IsDir() {
		return nsinit.Workspace{}, fmt.Errorf("workspace: %s is not a directory", ws)
	}
	lower := nsinit.Source{Path: ws}
	if s.id.root && !forcePaths {
		ns, err := idmapUserns(ws, s.id)
		if err != nil {
			return nsinit.Workspace{}, &MissingError{Mechanism: "idmapped workspace mount", Err: err}
		}
		tree, err := detachedTree(ws, ns)
		ns.Close()
		if err != nil {
			return nsinit.Workspace{}, &MissingError{Mechanism: "idmapped workspace mount", Err: err}
		}
		lower = nsinit.Source{FD: add(tree)}
	}
	if cfg.WorkspaceWrite {
		return nsinit.Workspace{Mode: nsinit.WorkspaceBind, Lower: lower, ReadOnly: gitPaths(ws)}, nil
	}

	if err := s.makeState(fi.Mode().Perm()); err != nil {
		return nsinit.Workspace{}, err
	}
	state := nsinit.Source{Path: s.state}
	if s.id.root && !forcePaths {
		tree, err := detachedTree(s.state, nil)
		if err != nil {
			return nsinit.Workspace{}, &MissingError{Mechanism: "detached mounts", Err: err}
		}
		state = nsinit.Source{FD: add(tree)}
	}
	w := nsinit.Workspace{Mode: nsinit.WorkspaceOverlay, Lower: lower, State: state}
	if w.Layers, err = s.prepareLayers(add, false); err != nil {
		return nsinit.Workspace{}, err
	}
	return w, nil
}

// prepareRootFS passes cfg.RootFS to the init (detached as root, by path otherwise).
func (s *Sandbox) prepareRootFS(add func(*os.File) int) (nsinit.Source, error) {
	if s.cfg.RootFS == "" {
		return nsinit.Source{}, nil
	}
	root, err := filepath.Abs(s.cfg.RootFS)
	if err != nil {
		return nsinit.Source{}, fmt.Errorf("rootfs: %w", err)
	}
	if !s.id.root || forcePaths {
		return nsinit.Source{Path: root}, nil
	}
	tree, err := detachedTree(root, nil)
	if err != nil {
		return nsinit.Source{}, fmt.Errorf("rootfs: %w", err)
	}
	return nsinit.Source{FD: add(tree)}, nil
}
