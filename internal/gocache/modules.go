package gocache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentbox/agentbox/internal/task"
)

// ModulesFor returns the module cache for the Go tasks among tasks: dir as it
// is, or, with goproxy, filled from it first (DownloadModules); an empty dir is
// DefaultModules. It returns "" when neither is given or none of the tasks is in
// Go. say hears where the cache is before a download.
func ModulesFor(ctx context.Context, tasks []*task.Task, dir, goproxy string, say func(string)) (string, error) {
	if !slices.ContainsFunc(tasks, func(t *task.Task) bool { return t.Language == task.Go }) || (goproxy == "" && dir == "") {
		return "", nil
	}
	if dir == "" {
		var err error
		if dir, err = DefaultModules(); err != nil {
			return "", err
		}
	}
	if goproxy != "" {
		say("go module cache: " + dir + " (the Go tasks' modules from " + goproxy + ", checked against their go.sum)")
		if err := DownloadModules(ctx, tasks, dir, goproxy, ""); err != nil {
			return "", err
		}
	}
	return filepath.Abs(dir)
}

// DefaultModules is the module cache in the user's cache directory, shared by
// every Go version and reused by later runs.
func DefaultModules() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("go modules: %w (give --go-mod-cache DIR)", err)
	}
	return filepath.Join(base, "agentbox", "gomodcache"), nil
}

// DownloadModules fills the module cache dir (GOMODCACHE's layout; created if
// missing) with the modules the Go tasks among tasks require, for
// grade.Options.GoModCache and Mounts: `go mod download` on the host, through goproxy (GOPROXY's
// syntax: a proxy URL, file:///DIR for a local proxy tree; "direct" and version
// control are refused, since they would run git on URLs a task names), checked
// against each task's go.sum. It needs the proxy, hence the network, unless
// goproxy is local; grading then runs with GOPROXY=off. Only go.mod and go.sum
// are read, from a private copy: nothing of the task runs and no command runs in
// its repository. gobin is the go command (found on PATH, else
// /usr/local/go/bin/go, when empty).
func DownloadModules(ctx context.Context, tasks []*task.Task, dir, goproxy, gobin string) error {
	if strings.Contains(goproxy, "direct") || goproxy == "" || goproxy == "off" {
		return fmt.Errorf("go modules: GOPROXY %q: give a module proxy (https://proxy.golang.org, file:///path/to/proxy); \"direct\" would run version control on the task's behalf", goproxy)
	}
	if gobin == "" {
		var err error
		if gobin, err = exec.LookPath("go"); err != nil {
			gobin = "/usr/local/go/bin/go"
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("go modules: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for _, t := range tasks {
		if t.Language != task.Go {
			continue
		}
		if err := downloadOne(ctx, t, abs, goproxy, gobin); err != nil {
			return fmt.Errorf("go modules of %s: %w", t.ID, err)
		}
	}
	return nil
}

func downloadOne(ctx context.Context, t *task.Task, modcache, goproxy, gobin string) error {
	work, err := os.MkdirTemp("", "agentbox-gomod-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	root, err := os.OpenRoot(t.Repo)
	if err != nil {
		return err
	}
	defer root.Close()
	mod := filepath.Join(work, "mod")
	if err := os.Mkdir(mod, 0o755); err != nil {
		return err
	}
	for _, name := range []string{"go.mod", "go.sum"} {
		data, err := root.ReadFile(name)
		if errors.Is(err, os.ErrNotExist) && name == "go.sum" {
			continue
		}
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(mod, name), data, 0o644); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gobin, "mod", "download")
	cmd.Dir = mod
	cmd.Env = []string{
		"PATH=" + filepath.Dir(gobin) + ":/usr/bin:/bin",
		"HOME=" + work,
		"GOPATH=" + filepath.Join(work, "gopath"),
		"GOCACHE=" + filepath.Join(work, "gocache"),
		"GOMODCACHE=" + modcache,
		"GOPROXY=" + goproxy,
		"GOSUMDB=off", // go.sum, part of the task, is what the modules are checked against
		"GOFLAGS=-mod=mod",
		"GOVCS=*:off",
		"GOTOOLCHAIN=local",
		"GOWORK=off",
		"GOENV=off",
		"CGO_ENABLED=0",
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go mod download: %w: %s", err, tail(out.String(), 2000))
	}
	return nil
}
