package task

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// trees validates repo/ and the hidden tests directory and fills in HiddenFiles,
// the protected globs that depend on them, and the compiled globs.
func (l *loader) trees(t *Task) error {
	repoFiles, repoDirs, err := l.walk(t.Repo, "repo/", true)
	if err != nil {
		return err
	}
	hiddenName := l.rel(t.Hidden) + "/"
	hiddenFiles, hiddenDirs, err := l.walk(t.Hidden, hiddenName, false)
	if err != nil {
		return err
	}
	if len(hiddenFiles) == 0 {
		return &Error{File: t.Hidden, Err: errors.New("no files: hidden tests are what the grader trusts; add at least one")}
	}
	for _, f := range hiddenFiles {
		if repoDirs[f] {
			return &Error{File: filepath.Join(t.Hidden, filepath.FromSlash(f)), Err: errors.New("is a file where repo/ has a directory; it cannot be copied over the repository")}
		}
	}
	for d := range hiddenDirs {
		if slices.Contains(repoFiles, d) {
			return &Error{File: filepath.Join(t.Hidden, filepath.FromSlash(d)), Err: errors.New("is a directory where repo/ has a file; it cannot be copied over the repository")}
		}
	}
	t.HiddenFiles = hiddenFiles
	t.Witnessed = slices.ContainsFunc(hiddenFiles, func(f string) bool { return slices.Contains(witnessFiles, path.Base(f)) })

	for i, g := range t.PublicTests {
		p, _ := compileGlob(g)
		if !slices.ContainsFunc(repoFiles, func(f string) bool { return p.matchesPrefix(strings.Split(f, "/")) }) {
			return l.errf(fmt.Sprintf("public_tests[%d]", i), "%q matches no file in repo/", g)
		}
	}
	for _, f := range hiddenFiles {
		t.ProtectedGlobs = append(t.ProtectedGlobs, "/"+escapeGlob(f))
	}
	for _, g := range t.ProtectedGlobs {
		p, err := compileGlob(g)
		if err != nil { // every glob was checked already; this guards the escaping
			return l.errf("protected", "%q: %v", g, err)
		}
		t.protected = append(t.protected, p)
	}
	return nil
}

// witnessFiles are the hidden files of agentbox's own runners, whose results carry
// the nonce (Task.Witnessed).
var witnessFiles = []string{"agentbox_unittest.py", "agentbox_judge.py", "agentbox_witness_test.go"}

// walk lists the regular files and symlinks (as slash paths relative to root,
// sorted) and the directories under root. It rejects anything else, symlinks that
// resolve outside root, and any path component named .git in any letter case,
// except, when gitDir is set, a directory named exactly .git at the root. That
// directory is checked like the rest of the tree but left out of files and dirs:
// it is history for the agent, never a place for tests or hidden files.
func (l *loader) walk(root, name string, gitDir bool) (files []string, dirs map[string]bool, err error) {
	fi, err := os.Lstat(root)
	switch {
	case err != nil:
		return nil, nil, &Error{File: root, Err: fmt.Errorf("%v; a task needs %s", unwrapPathError(err), name)}
	case !fi.IsDir():
		return nil, nil, &Error{File: root, Err: errors.New("not a directory")}
	}
	dirs = map[string]bool{}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return &Error{File: p, Err: unwrapPathError(err)}
		}
		if p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		inGit := gitDir && (rel == ".git" || strings.HasPrefix(rel, ".git/"))
		switch mode := d.Type(); {
		case rel == ".git" && inGit:
			if !mode.IsDir() {
				return &Error{File: p, Err: errors.New("must be a directory: a .git file or symlink would point git outside the task")}
			}
		case strings.EqualFold(d.Name(), ".git") && !inGit:
			if gitDir {
				return &Error{File: p, Err: errors.New("git history is allowed only as a directory named .git at the root of repo/; remove this one")}
			}
			return &Error{File: p, Err: errors.New("a task must not carry git history here (an agent could mine it for the answer); remove it")}
		case mode.IsDir():
			if !inGit {
				dirs[rel] = true
			}
		case mode.IsRegular():
			if !inGit {
				files = append(files, rel)
			}
		case mode&fs.ModeSymlink != 0:
			if err := checkLink(root, p); err != nil {
				return &Error{File: p, Err: err}
			}
			if !inGit {
				files = append(files, rel)
			}
		default:
			return &Error{File: p, Err: fmt.Errorf("unsupported file type %v; use regular files, directories and symlinks", mode)}
		}
		return nil
	})
	slices.Sort(files)
	return files, dirs, err
}

// checkLink rejects a symlink unless it is relative and resolves, both by its text
// and through the file system, to an existing path inside root. The copy the
// grader makes of root must not reach anything outside it.
func checkLink(root, link string) error {
	target, err := os.Readlink(link)
	if err != nil {
		return unwrapPathError(err)
	}
	if filepath.IsAbs(target) {
		return fmt.Errorf("symlink to the absolute path %q; use a relative target inside the tree", target)
	}
	if !within(filepath.Join(filepath.Dir(link), target), root) {
		return fmt.Errorf("symlink to %q leaves %s", target, filepath.Base(root))
	}
	real, err := filepath.EvalSymlinks(link)
	if err != nil {
		return fmt.Errorf("dangling symlink to %q", target)
	}
	if !within(real, root) {
		return fmt.Errorf("symlink to %q resolves outside %s", target, filepath.Base(root))
	}
	return nil
}

func (l *loader) rel(p string) string {
	r, err := filepath.Rel(l.dir, p)
	if err != nil {
		return p
	}
	return path.Clean(filepath.ToSlash(r))
}
