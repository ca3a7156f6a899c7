package gocache

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/runner"
	"github.com/agentbox/agentbox/internal/task"
	"github.com/agentbox/agentbox/internal/workspace"
)

// Service is the part of the environment service the cache needs: environments
// to compile in, commands, and files in and out.
type Service interface {
	Create(ctx context.Context, o env.CreateOptions) (env.Info, error)
	Destroy(ctx context.Context, owner env.Owner, id string) error
	Exec(ctx context.Context, owner env.Owner, id string, r env.ExecRequest) (*runner.Result, error)
	Mkdir(ctx context.Context, owner env.Owner, id, path string) error
	Download(ctx context.Context, owner env.Owner, id, path string, w io.Writer) error
	Upload(ctx context.Context, owner env.Owner, id, path string, r io.Reader) error
}

// defaultPath is the PATH of the compile unless Warm is given one: the standard
// directories and the Go toolchain's (grade.DefaultPath).
const defaultPath = "/usr/local/go/bin:" + runner.DefaultPath

// Warm fills dir (a host directory, created if missing) with a Go build cache for
// the Go tasks among tasks, to be passed as grade.Options.GoCache and mounted
// into agents' environments (Mounts): without one, every Go grading compiles the
// standard library's test dependencies again (~19 s here instead of ~1 s).
//
// Each task's starting repository is compiled in a fresh environment of svc with
// no network, `go test -exec /bin/true ./...`: test binaries are built and never
// run, so no code of the task executes and the cache holds only what the compiler
// made from the source. So are the standard packages the hidden Go files import
// (the judge's worker needs encoding/json), but never the hidden files themselves:
// agents get copies of this cache, and compiled hidden code would leak it. The cache grows task by task
// (each compiles against the previous ones' output) and replaces dir only once
// complete, so a reader of dir never sees half a cache. modCache, when set, is the
// module cache (DownloadModules) the compile reads the tasks' dependencies from;
// path is the PATH of the compile (the standard directories and the Go
// toolchain's when empty). The compile has the task's timeout.
func Warm(ctx context.Context, svc Service, owner env.Owner, tasks []*task.Task, dir, modCache, path string) error {
	if path == "" {
		path = defaultPath
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("go cache: %w", err)
	}
	for _, t := range tasks {
		if t.Language != task.Go {
			continue
		}
		key, err := warmKey(t)
		if err != nil {
			return fmt.Errorf("go cache: %w", err)
		}
		stamp, _ := os.ReadFile(filepath.Join(dir, warmStamp))
		if slices.Contains(strings.Split(string(stamp), "\n"), key) {
			continue
		}
		if err := warmOne(ctx, svc, owner, t, dir, modCache, path, append(stamp, key+"\n"...)); err != nil {
			return fmt.Errorf("go cache: warm with %s: %w", t.ID, err)
		}
	}
	return nil
}

// warmStamp lists the tasks a cache directory was warmed with, one warmKey a line,
// so that warming it again for the same code does nothing.
const warmStamp = "agentbox-warmed.txt"

// warmKey names a task's starting code: its id and a digest of its repository and
// of the standard packages its hidden Go files import.
func warmKey(t *task.Task) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(t.Repo, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(t.Repo, p)
		fmt.Fprintf(h, "%q %v\n", rel, d.Type())
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "%d %x\n", len(b), sha256.Sum256(b))
		}
		return nil
	})
	fmt.Fprintf(h, "std %q\n", hiddenStdImports(t))
	return fmt.Sprintf("%s %x", t.ID, h.Sum(nil)), err
}

func warmOne(ctx context.Context, svc Service, owner env.Owner, t *task.Task, dir, modCache, path string, stamp []byte) (err error) {
	ctx, cancel := context.WithTimeout(ctx, t.Limits.Timeout+time.Minute)
	defer cancel()
	mounts, vars := Mounts(t, "", modCache)
	info, err := svc.Create(ctx, env.CreateOptions{Owner: owner, Workspace: t.Repo, Mounts: mounts, Template: t.Environment.TemplateName(),
		Limits: env.Limits{Memory: t.Limits.Memory, Pids: t.Limits.Pids}, Labels: map[string]string{"agentbox.warm": t.ID}})
	if err != nil {
		return fmt.Errorf("create environment: %w", err)
	}
	defer func() {
		if derr := svc.Destroy(context.WithoutCancel(ctx), owner, info.ID); derr != nil && err == nil {
			err = fmt.Errorf("destroy environment: %w", derr)
		}
	}()
	scratch := ".agentbox-warm-" + rand.Text()
	if err := svc.Mkdir(ctx, owner, info.ID, scratch+"/gocache"); err != nil {
		return err
	}
	if err := upload(ctx, svc, owner, info.ID, dir, scratch+"/gocache"); err != nil {
		return err
	}
	envv := task.SetEnv(append([]string{"PATH=" + path}, t.Env("/workspace/"+scratch)...), vars...)
	compiles := [][]string{{"go", "test", "-count=1", "-exec", "/bin/true", "./..."}}
	if std := hiddenStdImports(t); len(std) > 0 {
		compiles = append(compiles, append([]string{"go", "build"}, std...))
	}
	for _, argv := range compiles {
		res, err := svc.Exec(ctx, owner, info.ID, env.ExecRequest{
			Argv: argv, Env: envv, Cwd: "/workspace", Timeout: t.Limits.Timeout, OutputLimit: 64 << 10,
		})
		if err != nil {
			return fmt.Errorf("compile: %w", err)
		}
		if res.ExitStatus() != 0 {
			// The starting code must compile: its tests are supposed to fail, not to break the build.
			return fmt.Errorf("compile exited %d: %s", res.ExitStatus(), tail(res.Stdout+res.Stderr, 2000))
		}
	}

	next := dir + ".new-" + rand.Text()
	if err := os.Mkdir(next, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(next)
	root, err := workspace.OpenRoot(next, workspace.Options{MaxTotalBytes: 8 << 30, MaxEntries: 1_000_000})
	if err != nil {
		return err
	}
	defer root.Close()
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(svc.Download(ctx, owner, info.ID, scratch+"/gocache", pw)) }()
	err = root.UntarFrom(pr, ".")
	pr.CloseWithError(errors.New("download ended"))
	if err != nil {
		return fmt.Errorf("copy the cache out: %w", err)
	}
	if err := os.WriteFile(filepath.Join(next, warmStamp), stamp, 0o644); err != nil {
		return err
	}
	old := dir + ".old-" + rand.Text()
	if err := os.Rename(dir, old); err != nil {
		return err
	}
	if err := os.Rename(next, dir); err != nil {
		os.Rename(old, dir)
		return err
	}
	return os.RemoveAll(filepath.Clean(old))
}

// hiddenStdImports lists the standard packages (no dot in the first path element)
// that t's hidden Go files import, sorted.
func hiddenStdImports(t *task.Task) []string {
	var std []string
	for _, name := range t.HiddenFiles {
		if !strings.HasSuffix(name, ".go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(t.Hidden, filepath.FromSlash(name)), nil, parser.ImportsOnly)
		if err != nil {
			continue
		}
		for _, is := range f.Imports {
			p, err := strconv.Unquote(is.Path.Value)
			if first, _, _ := strings.Cut(p, "/"); err == nil && !strings.Contains(first, ".") && p != "C" {
				std = append(std, p)
			}
		}
	}
	slices.Sort(std)
	return slices.Compact(std)
}

// upload copies the cache in the host directory cache into dst, a directory of
// environment id's workspace (made if missing), for the next warm-up to compile
// against. The stamp of the tasks it was warmed with stays behind.
func upload(ctx context.Context, svc Service, owner env.Owner, id, cache, dst string) error {
	names, err := files(cache)
	if err != nil {
		return fmt.Errorf("read go cache: %w", err)
	}
	if len(names) == 0 {
		return nil
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(workspace.TarFiles(pw, cache, names)) }()
	err = svc.Upload(ctx, owner, id, dst, pr)
	pr.CloseWithError(errors.New("upload ended"))
	if err != nil {
		return fmt.Errorf("upload to %s: %w", dst, err)
	}
	return nil
}

// files lists the regular files of a cache directory, slash-separated and
// relative, without the stamp.
func files(dir string) ([]string, error) {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			if rel != warmStamp {
				names = append(names, filepath.ToSlash(rel))
			}
		}
		return nil
	})
	return names, err
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// For returns the warm cache for the Go tasks among tasks, warming it first where
// needed (Warm, with the module cache modCache), or "" when none of them is in
// Go. An empty dir is Default. say hears where the cache is, before a warm-up
// that may take a while.
func For(ctx context.Context, svc Service, owner env.Owner, tasks []*task.Task, dir, modCache string, say func(string)) (string, error) {
	if !slices.ContainsFunc(tasks, func(t *task.Task) bool { return t.Language == task.Go }) {
		return "", nil
	}
	if dir == "" {
		var err error
		if dir, err = Default(ctx); err != nil {
			return "", err
		}
	}
	say("go build cache: " + dir + " (warmed on first use by compiling the Go tasks' starting code in sandboxes)")
	if err := Warm(ctx, svc, owner, tasks, dir, modCache, ""); err != nil {
		return "", err
	}
	return dir, nil
}

// Default is the cache of this host's Go toolchain in the user's cache directory,
// one per Go version, reused by later runs.
func Default(ctx context.Context) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("go cache: %w (give --go-cache DIR or --go-cache off)", err)
	}
	out, err := exec.CommandContext(ctx, "go", "env", "GOVERSION").Output()
	if err != nil {
		cmd := exec.CommandContext(ctx, filepath.Join("/usr/local/go/bin", "go"), "env", "GOVERSION")
		if out, err = cmd.Output(); err != nil {
			return "", errors.New("go cache: no go toolchain found for the Go tasks (install Go at /usr/local/go, or give --go-cache off to compile cold)")
		}
	}
	return filepath.Join(base, "agentbox", "gocache-"+strings.TrimSpace(string(out))), nil
}
