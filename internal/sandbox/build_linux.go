package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/image"
	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
)

// buildPath is a build step's PATH when the image's config sets none.
const buildPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// RunStep runs step on root with upper and work as its overlay's upper and work
// directories (see BuildRunner and image.Runner).
func (r *BuildRunner) RunStep(ctx context.Context, root image.Root, step image.Step, upper, work string) error {
	argv := step.Argv()
	switch {
	case len(argv) == 0:
		return fmt.Errorf("build sandbox: step %s runs no command", step)
	case len(root.Layers) == 0 && !root.Host:
		return fmt.Errorf("build sandbox: step %s has no base layers", step)
	}
	env := root.Env
	if !hasVar(env, "PATH") {
		env = append(append([]string(nil), env...), buildPath)
	}
	if !hasVar(env, "HOME") {
		env = append(env, "HOME=/root")
	}
	dir := root.WorkingDir
	if dir == "" {
		dir = "/"
	}
	cfg := Config{Argv: argv, Env: env, Dir: dir, Memory: r.Memory, Pids: r.Pids, CPUs: r.CPUs, TmpSize: r.TmpSize,
		build: &buildRoot{layers: root.Layers, host: root.Host, upper: upper, work: work}}
	var proxy *egress.Proxy
	if preset := step.Egress(); preset != "" {
		var err error
		proxy, err = egress.NewProxy(egress.Config{
			Policy:        egress.Policy{Allow: []string{"preset:" + preset}, AllowPrivate: r.AllowPrivate},
			UpstreamRoots: r.UpstreamRoots,
		})
		if err != nil {
			return fmt.Errorf("build sandbox: egress %s: %w", preset, err)
		}
		defer proxy.Close()
		cfg.Network = &Network{Proxy: proxy, Trust: r.Trust}
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	tail := &tailBuffer{max: 4 << 10}
	var out io.Writer = tail
	if r.Output != nil {
		out = io.MultiWriter(r.Output, tail)
	}
	copied := make(chan struct{})
	go func() {
		io.Copy(out, pr)
		pr.Close()
		close(copied)
	}()
	sb, err := Start(cfg, Stdio{Stdout: pw, Stderr: pw})
	pw.Close()
	if err != nil {
		<-copied
		return fmt.Errorf("build sandbox: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = sb.Kill() })
	exit, werr := sb.Wait()
	stop()
	_, derr := sb.Destroy()
	<-copied
	if derr == nil {
		derr = dropMountpoints(upper, root.Layers)
	}
	if derr == nil && root.Host {
		derr = dropHostDirs(upper)
	}
	switch {
	case werr != nil:
		return fmt.Errorf("build sandbox: %w", werr)
	case derr != nil:
		return fmt.Errorf("build sandbox: %w", derr)
	case ctx.Err() != nil:
		return fmt.Errorf("step %s: %w", step, ctx.Err())
	case exit.SetupErr != nil:
		return fmt.Errorf("step %s: %w", step, exit.SetupErr)
	case exit.ExitCode != 0:
		return fmt.Errorf("step %s failed (exit %d, signal %d): %s%s", step, exit.ExitCode, exit.Signal, strings.TrimSpace(tail.String()), refusals(proxy))
	}
	return nil
}

// refusals names what a failed step's egress proxy refused, which the step's own
// output (an HTTP 403 or 502) does not say, and for a refused address the prefix
// that would open it; "" for no proxy or no refusal.
func refusals(proxy *egress.Proxy) string {
	if proxy == nil {
		return ""
	}
	var out []string
	seen := map[string]bool{}
	for _, ev := range proxy.Log() {
		if ev.Decision != egress.Denied {
			continue
		}
		msg := fmt.Sprintf("%s:%d: %s (%s)", ev.Host, ev.Port, ev.Reason, ev.Detail)
		if ev.Reason == egress.ReasonAddressRefused && ev.Addr.IsValid() {
			msg += fmt.Sprintf("; a site's mirror there needs --allow-private %s (builds.allow_private in a daemon's configuration)", netip.PrefixFrom(ev.Addr, ev.Addr.BitLen()))
		}
		if !seen[msg] {
			seen[msg] = true
			out = append(out, msg)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "\nthe build's egress proxy refused " + strings.Join(out, "\n  and ")
}

// initMountpoints are what a build sandbox's init may create in its root to
// mount on (nsinit's ensureDir and ensureFile), files before their directories.
var initMountpoints = []string{
	"etc/hosts", "etc/hostname", "etc/resolv.conf", "etc/nsswitch.conf", "etc/passwd", "etc/group",
	strings.TrimPrefix(nsinit.TrustBundle, "/"), path.Dir(strings.TrimPrefix(nsinit.TrustBundle, "/")),
	"dev", "proc", "tmp", "workspace", "etc",
}

// dropMountpoints removes from a build step's upper layer the mount points its
// init created there (an empty file or directory no lower layer has), so that
// the step's layer holds only what the step wrote. Nothing the step wrote can
// be among them: each was covered by a mount while the step ran.
func dropMountpoints(upper string, layers []string) error {
next:
	for _, rel := range initMountpoints {
		p := filepath.Join(upper, rel)
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		switch {
		case fi.Mode().IsRegular() && fi.Size() == 0:
		case fi.IsDir():
			if ents, err := os.ReadDir(p); err != nil || len(ents) > 0 {
				continue
			}
		default:
			continue
		}
		for _, l := range layers {
			if _, err := os.Lstat(filepath.Join(l, rel)); err == nil {
				continue next
			}
		}
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("build sandbox: remove mount point /%s: %w", rel, err)
		}
	}
	return nil
}

// dropHostDirs removes from a build step's upper layer the directories made
// for the host directories' overlays (see hostDirs) where the step wrote
// nothing in them: an empty directory without an opaque mark adds nothing to
// the host's.
func dropHostDirs(upper string) error {
	for _, d := range image.HostDirs {
		p := filepath.Join(upper, d)
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() {
			continue
		}
		if ents, err := os.ReadDir(p); err != nil || len(ents) > 0 {
			continue
		}
		if n, _ := unix.Lgetxattr(p, "user.overlay.opaque", make([]byte, 4)); n > 0 {
			continue
		}
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("build sandbox: remove /%s: %w", d, err)
		}
	}
	return nil
}

// hasVar reports whether env sets name.
func hasVar(env []string, name string) bool {
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == name {
			return true
		}
	}
	return false
}

// prepareBuild passes the init a build sandbox's root: the common directory of
// the step's layers as one detached read-only tree (not idmapped: the sandbox's
// namespace maps the image's ids as they are stored), and the directory holding
// upper and work.
func (s *Sandbox) prepareBuild(add func(*os.File) int) (*nsinit.Image, error) {
	b := s.cfg.build
	if os.Geteuid() != 0 {
		return nil, &MissingError{Mechanism: "build sandbox", Err: errors.New("needs agentbox to run as root")}
	}
	if filepath.Dir(b.upper) != filepath.Dir(b.work) {
		return nil, fmt.Errorf("build sandbox: upper %s and work %s are not in one directory", b.upper, b.work)
	}
	dirs := make([]string, len(b.layers))
	for i, l := range b.layers {
		if !filepath.IsAbs(l) {
			return nil, fmt.Errorf("build sandbox: layer %s is not an absolute path", l)
		}
		dirs[i] = filepath.Clean(l)
	}
	img := &nsinit.Image{Upper: filepath.Base(b.upper), Work: filepath.Base(b.work), Build: true}
	if len(dirs) > 0 {
		parent := commonDir(dirs)
		tree, err := layerTree(parent, nil)
		if err != nil {
			return nil, &MissingError{Mechanism: "detached mounts", Err: err}
		}
		img.Layers = nsinit.Source{FD: add(tree)}
		for i := len(dirs) - 1; i >= 0; i-- {
			rel, err := filepath.Rel(parent, dirs[i])
			if err != nil {
				return nil, err
			}
			img.Lowers = append(img.Lowers, rel)
		}
	}
	if b.host {
		// The build namespace maps 0..IDCount-1 to IDBase..: idmapped the same
		// way, the host's files are owned by the build's users as they are on
		// the host (root's by root), and copied up they are owned as layer
		// files are.
		ns, err := idmapRange(syscall.SysProcIDMap{ContainerID: 0, HostID: image.IDBase, Size: image.IDCount},
			syscall.SysProcIDMap{ContainerID: 0, HostID: image.IDBase, Size: image.IDCount})
		if err != nil {
			return nil, &MissingError{Mechanism: "idmapped host directories", Err: err}
		}
		stateDir := filepath.Dir(b.upper)
		mkdir := func(rel string, perm os.FileMode) error {
			p := filepath.Join(stateDir, rel)
			if err := os.Mkdir(p, perm); err != nil {
				return fmt.Errorf("build sandbox: %w", err)
			}
			return os.Lchown(p, image.IDBase, image.IDBase)
		}
		img.HostDirs, err = hostDirs(ns, add, mkdir, img.Upper, img.Work)
		ns.Close()
		if err != nil {
			return nil, err
		}
		img.Host, img.HostEtc = true, image.HostEtc
	}
	state, err := detachedTree(filepath.Dir(b.upper), nil)
	if err != nil {
		return nil, &MissingError{Mechanism: "detached mounts", Err: err}
	}
	img.State = nsinit.Source{FD: add(state)}
	return img, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Write(p)
	if over := t.b.Len() - t.max; over > 0 {
		t.b.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}
