package task

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// gitRunner runs git with explicit argv (never a shell) and an environment that
// keeps the host's git configuration out: HOME is an empty private directory, the
// system and global config files are ignored, only the local file transport is
// allowed, and git never prompts or searches above a command's directory.
type gitRunner struct {
	bin string
	env []string
}

func newGit(home string) (*gitRunner, error) {
	bin, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("git is needed to import SWE-bench instances: %w", err)
	}
	if bin, err = filepath.Abs(bin); err != nil {
		return nil, err
	}
	return &gitRunner{bin: bin, env: []string{
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"PATH=" + filepath.Dir(bin) + string(os.PathListSeparator) + "/usr/bin:/bin",
		"LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_SYSTEM=" + os.DevNull,
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_ALLOW_PROTOCOL=file",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_OPTIONAL_LOCKS=0",
	}}, nil
}

// run runs git in dir and returns its standard output.
func (g *gitRunner) run(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, g.bin, args...)
	cmd.Dir = dir
	// The ceiling keeps git from taking a repository above dir for dir's own.
	cmd.Env = append(g.env[:len(g.env):len(g.env)], "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, clipTail(strings.TrimSpace(stderr.String()), 1000))
	}
	return stdout.String(), nil
}

// findClone returns the first directory among Repos/owner__name, Repos/owner/name
// and Repos/name. repo is a checked owner/name.
func findClone(repos, repo string) (string, error) {
	owner, name, _ := strings.Cut(repo, "/")
	tried := []string{
		filepath.Join(repos, owner+"__"+name),
		filepath.Join(repos, owner, name),
		filepath.Join(repos, name),
	}
	for _, p := range tried {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("no local clone of %s; tried %s; clone it with full history to the first (git clone https://github.com/%s %s)",
		repo, strings.Join(tried, ", "), repo, tried[0])
}

// checkRepo checks that clone is the top of a git repository (a work tree or a
// bare repository), not a directory inside another one.
func (g *gitRunner) checkRepo(ctx context.Context, clone string) error {
	if _, err := g.run(ctx, clone, "rev-parse", "--git-dir"); err != nil {
		return fmt.Errorf("%s is not a git repository (%w)", clone, err)
	}
	return nil
}

// checkCommit checks that clone has the commit sha.
func (g *gitRunner) checkCommit(ctx context.Context, clone, sha string) error {
	if _, err := g.run(ctx, clone, "cat-file", "-e", sha+"^{commit}"); err != nil {
		if ctx.Err() != nil {
			return err
		}
		return fmt.Errorf("%s is not a commit in %s; fetch the full history there (a shallow or single-branch clone may lack it)", sha, clone)
	}
	return nil
}

// export writes the tree of commit sha into the new directory dst with a .git
// holding history up to sha and nothing else: one branch, main, at sha; no tags,
// remotes, reflogs, stash, hooks or FETCH_HEAD; no objects but those reachable
// from sha. The clone is only read: objects are fetched from it by hash, so
// nothing of it (its path, config, refs) lands in dst.
func (g *gitRunner) export(ctx context.Context, clone, sha, dst string) error {
	if err := os.Mkdir(dst, 0o755); err != nil {
		return err
	}
	steps := [][]string{
		// An empty template: no hooks, no sample files, no info/exclude.
		{"init", "-q", "--template=", "-b", "main"},
		{"config", "user.name", "agentbox"},
		{"config", "user.email", "agentbox@localhost"},
		{"-c", "protocol.version=2", "fetch", "-q", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules", "--", clone, sha},
		{"update-ref", "--no-deref", "refs/heads/main", sha},
		{"reset", "-q", "--hard", "main"},
		{"reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all"},
		{"gc", "-q", "--prune=now"},
	}
	for _, args := range steps {
		if _, err := g.run(ctx, dst, args...); err != nil {
			return err
		}
	}
	gitDir := filepath.Join(dst, ".git")
	for _, name := range []string{"logs", "hooks", "FETCH_HEAD", "ORIG_HEAD", "gc.log"} {
		if err := os.RemoveAll(filepath.Join(gitDir, name)); err != nil {
			return err
		}
	}
	// Check the result rather than trust the steps.
	head, err := g.run(ctx, dst, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	refs, err := g.run(ctx, dst, "for-each-ref", "--format=%(refname)")
	if err != nil {
		return err
	}
	status, err := g.run(ctx, dst, "status", "--porcelain", "--ignored", "--untracked-files=all")
	if err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(head) != sha:
		return fmt.Errorf("exported HEAD is %s, want %s", strings.TrimSpace(head), sha)
	case strings.TrimSpace(refs) != "refs/heads/main":
		return fmt.Errorf("exported repository has refs %q, want only refs/heads/main", refs)
	case status != "":
		return errors.New("exported work tree differs from its commit: " + clipTail(status, 500))
	}
	return nil
}

// clipTail returns the last n bytes of s, marked as cut when it is longer.
func clipTail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
