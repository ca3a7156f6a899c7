package sandbox

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// gitPaths returns what must stay read-only when the sandbox writes straight into
// the host workspace ws, relative to ws: .git itself (the repository directory, the
// gitdir file of a worktree or submodule, or a symlink: pinned, so it cannot be
// replaced by a repository of the sandbox's making) and, when .git is such a file or
// a symlink, the repository it leads to if that lies inside ws (resolved, free of
// symlinks). Git on the host runs code from there at the user's next command: hooks,
// and config lines such as core.fsmonitor, core.hooksPath, core.sshCommand or filter
// drivers. Codex and Anthropic's sandbox runtime protect the same paths.
func gitPaths(ws string) []string {
	root, err := filepath.EvalSymlinks(ws)
	if err != nil {
		return nil
	}
	dotgit := filepath.Join(root, ".git")
	fi, err := os.Lstat(dotgit)
	if err != nil {
		return nil
	}
	out := []string{}
	target := ""
	switch {
	case fi.IsDir():
		return []string{".git"}
	case fi.Mode().IsRegular():
		out = append(out, ".git")
		target = readGitdir(dotgit)
		if target != "" && !filepath.IsAbs(target) {
			target = filepath.Join(root, target)
		}
	case fi.Mode()&os.ModeSymlink != 0:
		out = append(out, ".git")
		target = dotgit
	}
	if target == "" {
		return out
	}
	real, err := filepath.EvalSymlinks(target)
	if err != nil {
		return out
	}
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return out
	}
	return append(out, rel)
}

// readGitdir returns the path of a "gitdir: <path>" file, or "". A previous run in
// write mode may have left anything there: a FIFO is not waited on, a huge file not
// read whole.
func readGitdir(path string) string {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	line, _ := bufio.NewReader(io.LimitReader(f, 4096)).ReadString('\n')
	dir, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "gitdir: ")
	if !ok {
		return ""
	}
	return dir
}
