package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// walker compares two trees, writing the diff in path order.
type walker struct {
	opts    DiffOptions
	overlay bool // the new tree is an overlay whose lower layer is the old tree
	budget  int  // entries left to visit
	// ignore holds DefaultIgnore and the patterns of the .gitignore files of the
	// directories being walked, outermost first; underIgnored: the directory being
	// walked is itself ignored, so nothing new in it is diffed.
	ignore       []ignorePattern
	underIgnored bool
	out          bytes.Buffer
	sum          Summary
}

// diffTrees diffs the tree at oldPath against the tree at newPath, or (overlay)
// against the merged view of the upper layer newPath over the lower layer oldPath.
func diffTrees(oldPath, newPath string, overlay bool, opts DiffOptions) ([]byte, Summary, error) {
	w := &walker{opts: opts, overlay: overlay, budget: opts.MaxEntries}
	if !opts.IncludeIgnored {
		w.ignore = parseIgnore("", []byte(strings.Join(DefaultIgnore, "\n")))
	}
	oldRoot, err := openLayerRoot(oldPath)
	if err != nil {
		return nil, Summary{}, err
	}
	oldView := &view{lower: oldRoot}
	defer oldView.close()
	newRoot, err := openLayerRoot(newPath)
	if err != nil {
		return nil, Summary{}, err
	}
	newView := &view{lower: newRoot}
	defer newView.close() // whichever layers it holds by then
	if overlay {
		newView.upper, newView.lower = newRoot, nil
		opaque, err := upperDirState(newRoot)
		if err != nil {
			return nil, Summary{}, err
		}
		if !opaque { // the lower layer shows through: open it a second time
			if newView.lower, err = openLayerRoot(oldPath); err != nil {
				return nil, Summary{}, err
			}
		}
	}
	err = w.walk("", oldView, newView, 0)
	if err != nil && !errors.Is(err, errTruncated) {
		return nil, w.sum, err
	}
	return w.out.Bytes(), w.sum, nil
}

// walk compares the directory p of both trees (either view may be nil: the
// directory exists on one side only).
func (w *walker) walk(p string, old, new *view, depth int) error {
	oe, err := w.list(old)
	if err == nil {
		var ne map[string]*entry
		if ne, err = w.list(new); err == nil {
			return w.compare(p, oe, ne, depth)
		}
	}
	if errors.Is(err, errEntries) {
		return w.truncate(p, fmt.Sprintf("more than %d directory entries", w.opts.MaxEntries))
	}
	if p == "" {
		p = "."
	}
	if unreadable(err) {
		return w.omit(p, "directory "+unreadableReason)
	}
	return fmt.Errorf("%s: %w", quote(p), err)
}

// compare walks the union of two listings in git's path order: a directory sorts
// as its name plus "/", so that the walk emits whole paths in byte order, and a name
// that is a directory on one side and not on the other is two keys (deletion and
// addition).
func (w *walker) compare(p string, oe, ne map[string]*entry, depth int) error {
	key := func(e *entry) string {
		if e.isDir() {
			return e.name + "/"
		}
		return e.name
	}
	var keys []string
	for _, e := range oe {
		keys = append(keys, key(e))
	}
	for _, e := range ne {
		keys = append(keys, key(e))
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	if gi := ne[".gitignore"]; !w.opts.IncludeIgnored && gi != nil && gi.isRegular() && gi.st.Size <= maxIgnoreFile {
		if v, err := w.read(path.Join(p, ".gitignore"), gi); err == nil && v != nil {
			n := len(w.ignore)
			w.ignore = append(w.ignore, parseIgnore(p, v.data)...)
			defer func() { w.ignore = w.ignore[:n] }()
		}
	}
	for _, k := range keys {
		name, dir := strings.CutSuffix(k, "/")
		if !w.opts.IncludeGitDir && strings.EqualFold(name, ".git") {
			continue
		}
		o, n := oe[name], ne[name]
		if o != nil && o.isDir() != dir {
			o = nil
		}
		if n != nil && n.isDir() != dir {
			n = nil
		}
		if w.overlay && n != nil && !n.upper {
			continue // the lower entry shows through unchanged
		}
		cp := name
		if p != "" {
			cp = p + "/" + name
		}
		// As git does, ignore rules leave out only what is new (untracked): a
		// change to what the old tree holds is always diffed.
		isIgnored := !w.opts.IncludeIgnored && (w.underIgnored || ignored(w.ignore, cp, dir))
		if isIgnored && o == nil {
			w.sum.Ignored++
			continue
		}
		var err error
		switch {
		case len(cp) > maxPathLen:
			// git apply (and ApplyPatch) cannot create it on Linux anyway.
			err = w.omit(cp, fmt.Sprintf("path longer than %d bytes", maxPathLen))
		case dir && depth+1 > maxDepth:
			err = w.omit(cp, fmt.Sprintf("directory more than %d levels deep: its contents are not compared", maxDepth))
		case dir:
			prev := w.underIgnored
			w.underIgnored = isIgnored
			err = w.subdir(cp, o, n, depth)
			w.underIgnored = prev
		default:
			err = w.file(cp, o, n)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (w *walker) subdir(p string, o, n *entry, depth int) error {
	var ov, nv *view
	defer func() { ov.close(); nv.close() }()
	if o != nil {
		d, err := o.dir.openDir(o.name, &o.st)
		if unreadable(err) {
			return w.omit(p, "directory "+unreadableReason)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", quote(p), err)
		}
		ov = &view{lower: d}
	}
	if n != nil {
		d, err := n.dir.openDir(n.name, &n.st)
		if unreadable(err) {
			return w.omit(p, "directory "+unreadableReason)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", quote(p), err)
		}
		if !n.upper {
			nv = &view{lower: d}
		} else {
			nv = &view{upper: d}
			opaque, err := upperDirState(d)
			if err != nil {
				return fmt.Errorf("%s: %w", quote(p), err)
			}
			if !opaque && n.below != nil {
				if nv.lower, err = n.below.dir.openDir(n.below.name, &n.below.st); err != nil {
					return fmt.Errorf("%s: %w", quote(p), err)
				}
			}
		}
	}
	return w.walk(p, ov, nv, depth+1)
}
