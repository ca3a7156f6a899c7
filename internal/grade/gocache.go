package grade

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/task"
	"github.com/agentbox/agentbox/internal/workspace"
)

// WarmGoCache fills dir (a host directory, created if missing) with a Go build
// cache for the Go tasks among tasks, to be passed as Options.GoCache and handed
// to agents: without one, every Go grading compiles the standard library's test
// dependencies again (~19 s here instead of ~1 s).
//
// Each task's starting repository is compiled in a fresh environment of svc with
// no network, `go test -exec /bin/true ./...`: test binaries are built and never
// run, so no code of the task executes and the cache holds only what the compiler
// made from the source. Hidden tests are left out: agents get copies of this
// cache, and compiled hidden tests would leak them. The cache grows task by task
// (each compiles against the previous ones' output) and replaces dir only once
// complete, so a reader of dir never sees half a cache. path is the PATH of the
// compile (DefaultPath when empty).
func WarmGoCache(ctx context.Context, svc env.Service, owner env.Owner, tasks []*task.Task, dir, path string) error {
	if path == "" {
		path = DefaultPath
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
		if err := warmOne(ctx, svc, owner, t, dir, path, append(stamp, key+"\n"...)); err != nil {
			return fmt.Errorf("go cache: warm with %s: %w", t.ID, err)
		}
	}
	return nil
}

// warmStamp lists the tasks a cache directory was warmed with, one warmKey a line,
// so that warming it again for the same code does nothing.
const warmStamp = "agentbox-warmed.txt"

// warmKey names a task's starting code: its id and a digest of its repository.
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
	return fmt.Sprintf("%s %x", t.ID, h.Sum(nil)), err
}

func warmOne(ctx context.Context, svc env.Service, owner env.Owner, t *task.Task, dir, path string, stamp []byte) (err error) {
	ctx, cancel := context.WithTimeout(ctx, t.Limits.Timeout+time.Minute)
	defer cancel()
	info, err := svc.Create(ctx, env.CreateOptions{Owner: owner, Workspace: t.Repo, Network: "none",
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
	names, err := cacheFiles(dir)
	if err != nil {
		return err
	}
	if len(names) > 0 {
		if err := upload(ctx, svc, owner, info.ID, scratch+"/gocache", dir, names); err != nil {
			return err
		}
	}
	envv := append([]string{"PATH=" + path}, t.Env("/workspace/"+scratch)...)
	res, err := svc.Exec(ctx, owner, info.ID, env.ExecRequest{
		Argv: []string{"go", "test", "-count=1", "-exec", "/bin/true", "./..."},
		Env:  envv, Cwd: "/workspace", Timeout: t.Limits.Timeout, OutputLimit: 64 << 10,
	})
	if err != nil {
		return fmt.Errorf("compile: %w", err)
	}
	if res.ExitStatus() != 0 {
		// The starting code must compile: its tests are supposed to fail, not to break the build.
		return fmt.Errorf("compile exited %d: %s", res.ExitStatus(), tail(res.Stdout+res.Stderr, 2000))
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

// SeedGoCache copies the Go cache in the host directory cache to dst, an absolute
// path outside /workspace inside environment id (an agent's /tmp), so that the
// agent's own `go test` starts warm and the copy never shows in its diff. The
// copy is the environment's own: what the agent writes there reaches no one else.
func SeedGoCache(ctx context.Context, svc env.Service, owner env.Owner, id, cache, dst string) error {
	names, err := cacheFiles(cache)
	if err != nil {
		return fmt.Errorf("seed go cache: %w", err)
	}
	stage := ".agentbox-gocache-" + rand.Text()
	if err := upload(ctx, svc, owner, id, stage, cache, names); err != nil {
		return fmt.Errorf("seed go cache: %w", err)
	}
	for _, argv := range [][]string{{"mkdir", "-p", filepath.Dir(dst)}, {"mv", "/workspace/" + stage, dst}} {
		res, err := svc.Exec(ctx, owner, id, env.ExecRequest{Argv: argv, Cwd: "/workspace", Timeout: time.Minute})
		if err != nil {
			return fmt.Errorf("seed go cache: %s: %w", argv[0], err)
		}
		if res.ExitStatus() != 0 {
			return fmt.Errorf("seed go cache: %s exited %d: %s", argv[0], res.ExitStatus(), tail(res.Stderr, 500))
		}
	}
	return nil
}
