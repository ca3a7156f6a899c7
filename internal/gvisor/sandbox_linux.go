package gvisor

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/agentbox/agentbox/internal/cgroup"
)

// Sandbox is one started command.
type Sandbox struct {
	id, state, runsc string
	cmd              *exec.Cmd
	cg               *cgroup.Cgroup
	upper            *os.File // O_PATH: the overlay's upper layer, in runsc's mount namespace
	upperMode        os.FileMode
	lock             *os.File      // held until the state directory is gone (see reapStale)
	release          chan struct{} // ends the thread that started runsc
	released         sync.Once
	exited           chan struct{}
	exit             Exit
	wsDir            *os.File // the workspace as the sandbox sees it (StartEnv)
	cfg              Config
}

// hostOverhead is the backstop added to Pids for the host tasks of the sandbox
// (runsc, the Sentry's and the gofer's threads, systrap's stub threads).
const hostOverhead = 512

// Start writes the bundle and starts runsc on it; the command runs once Start
// returns. The caller must Wait, then Kill and Destroy.
func Start(cfg Config, stdio Stdio) (*Sandbox, error) {
	return start(cfg, stdio, false)
}

// start is Start, or with env the sandbox of StartEnv: its process is gvinit's
// init, as root without capabilities, and the agentbox binary is shown at
// gvinit.Path for the commands' helpers.
func start(cfg Config, stdio Stdio, env bool) (_ *Sandbox, err error) {
	runsc := cfg.Runsc
	if runsc == "" {
		runsc = "runsc"
	}
	bin, err := exec.LookPath(runsc)
	if err != nil {
		return nil, fmt.Errorf("%w: %s not found: install it with `%s`", ErrUnsupported, runsc, InstallCommand)
	}
	reapStale(os.TempDir())
	id := "agentbox-" + randomHex()
	state, err := os.MkdirTemp("", statePrefix)
	if err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	sb := &Sandbox{id: id, state: state, runsc: bin, release: make(chan struct{}), exited: make(chan struct{}), cfg: cfg}
	defer func() {
		if err != nil {
			sb.Destroy()
		}
	}()
	if sb.lock, err = lockState(state, id); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	binds, err := sb.layout(cfg)
	if err != nil {
		return nil, err
	}
	sp := spec(cfg, filepath.Join(state, "rootfs"), binds)
	if env {
		if err := sb.envSpec(&sp); err != nil {
			return nil, err
		}
	}
	data, err := json.MarshalIndent(sp, "", "\t")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(state, "bundle", "config.json"), data, 0o600); err != nil {
		return nil, err
	}
	opts := cgroup.Options{Name: id, MemoryBytes: cfg.Memory, CPUs: cfg.CPUs}
	if cfg.Pids > 0 {
		opts.Pids = cfg.Pids + hostOverhead
	}
	if sb.cg, err = cgroup.New(opts); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	sb.cmd = exec.Command(bin, sb.flags("run", "runsc.log", "run", "--bundle", filepath.Join(state, "bundle"), id)...)
	sb.cmd.Stdin, sb.cmd.Stdout, sb.cmd.Stderr = stdio.Stdin, stdio.Stdout, stdio.Stderr
	sb.cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	sb.cmd.Dir = state
	// runsc run kills the Sentry and the gofer when it dies (it runs them
	// attached); it dies with the thread that started it.
	sb.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var overlay *overlayMount
	if cfg.Workspace != "" {
		overlay = &overlayMount{lower: cfg.Workspace, layers: filepath.Join(state, "layers"), merged: filepath.Join(state, "merged"),
			size: cfg.WorkspaceSize, uid: cfg.UID, gid: cfg.GID, mode: sb.upperMode, mounts: cfg.Mounts,
			views: filepath.Join(state, "mounts")}
	}
	if sb.wsDir, sb.upper, err = startIsolated(sb.cmd, sb.cg, overlay, filepath.Join(state, "merged"), sb.release); err != nil {
		return nil, err
	}
	go sb.wait()
	return sb, nil
}

// flags are runsc's global flags followed by args; log in the state directory
// is where runsc writes its own account of command cmd (for run, the command's
// raw wait status).
func (sb *Sandbox) flags(cmd, log string, args ...string) []string {
	f := []string{
		"--root=" + filepath.Join(sb.state, "runsc"),
		"--debug-log=" + filepath.Join(sb.state, log),
		"--debug-command=" + cmd,
		"--platform=systrap",
		"--network=none",
		// The run's own cgroup (see startIsolated) holds runsc and everything it starts.
		"--ignore-cgroups",
		// Mounts are what the spec says: no memory overlay over the read-only root.
		"--overlay2=none",
		"--rootless=false",
	}
	return append(f, args...)
}

// layout creates the bundle's directories: the empty root with its mount points,
// the generated /etc, the overlay's layers. It returns the binds in mount order.
func (sb *Sandbox) layout(cfg Config) ([]bind, error) {
	root := filepath.Join(sb.state, "rootfs")
	for _, d := range []string{"bundle", "runsc", "layers", "merged", "etc", "rootfs"} {
		if err := os.Mkdir(filepath.Join(sb.state, d), 0o700); err != nil {
			return nil, err
		}
	}
	// The Sentry and the gofer walk into the root as other users; it holds only
	// mount points.
	if err := os.Chmod(root, 0o755); err != nil {
		return nil, err
	}
	for _, d := range []string{"proc", "dev", "sys", "tmp", "etc", "workspace"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			return nil, err
		}
	}
	var binds []bind
	for _, d := range systemDirs {
		st, err := os.Lstat(d)
		switch {
		case err != nil:
			continue
		case st.Mode()&os.ModeSymlink != 0: // merged /usr: /bin -> usr/bin
			target, err := os.Readlink(d)
			if err != nil {
				return nil, err
			}
			if err := os.Symlink(target, filepath.Join(root, d)); err != nil {
				return nil, err
			}
		case st.IsDir():
			if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
				return nil, err
			}
			binds = append(binds, bind{source: d, target: d})
		}
	}
	etc, err := sb.etc()
	if err != nil {
		return nil, err
	}
	binds = append(binds, etc...)
	// Without a workspace, /workspace is an empty directory of the command's own.
	// With one, the overlay's root takes its owner and mode from the upper layer,
	// whose root gets the command's user and the host directory's mode (see
	// isolatedStart).
	merged := filepath.Join(sb.state, "merged")
	if cfg.Workspace == "" {
		if err := os.Chown(merged, int(cfg.UID), int(cfg.GID)); err != nil {
			return nil, err
		}
	} else {
		st, err := os.Stat(cfg.Workspace)
		if err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
		}
		sb.upperMode = st.Mode().Perm()
	}
	binds = append(binds, bind{source: merged, target: Workspace, write: true})
	for i, mt := range cfg.Mounts {
		if cfg.Workspace == "" {
			return nil, errors.New("mounts need a workspace")
		}
		view := filepath.Join(sb.state, "mounts", strconv.Itoa(i))
		for _, d := range []string{filepath.Join(root, mt.Target), view, view + ".lower"} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return nil, err
			}
		}
		binds = append(binds, bind{source: view, target: mt.Target, write: mt.CopyOnWrite})
	}
	return binds, nil
}

// systemDirs are the host directories shown read-only, as at the namespace level.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// SystemDirs returns the host directories the sandbox sees at the same paths.
func SystemDirs() []string { return append([]string(nil), systemDirs...) }

// etc writes the generated /etc and returns its bind and those of the host
// entries mirrored into it.
func (sb *Sandbox) etc() ([]bind, error) {
	dir := filepath.Join(sb.state, "etc")
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	for name, content := range etcFiles() {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	binds := []bind{{source: dir, target: "/etc"}}
	for _, name := range etcHost() {
		host := filepath.Join("/etc", name)
		st, err := os.Stat(host)
		if err != nil {
			continue
		}
		at := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
			return nil, err
		}
		if st.IsDir() {
			err = os.Mkdir(at, 0o755)
		} else {
			err = os.WriteFile(at, nil, 0o644)
		}
		if err != nil {
			return nil, err
		}
		binds = append(binds, bind{source: host, target: "/etc/" + name})
	}
	return binds, nil
}

func (sb *Sandbox) wait() {
	defer close(sb.exited)
	err := sb.cmd.Wait()
	status, ok := exitStatus(filepath.Join(sb.state, "runsc.log"))
	switch {
	case ok && status.Signaled():
		sb.exit.Signal = status.Signal()
	case ok:
		sb.exit.ExitCode = status.ExitStatus()
	default:
		// No status of the command: runsc failed, or was killed with the sandbox.
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, isWS := ee.Sys().(syscall.WaitStatus); isWS && ws.Signaled() {
				sb.exit.Signal = ws.Signal()
				return
			}
		}
		sb.exit.Err = fmt.Errorf("runsc failed: %w", runscError(filepath.Join(sb.state, "runsc.log"), err))
	}
}

// Wait blocks until runsc has returned.
func (sb *Sandbox) Wait() Exit {
	<-sb.exited
	return sb.exit
}

// Signal sends sig to every process of the sandbox; SIGKILL kills the sandbox.
func (sb *Sandbox) Signal(sig syscall.Signal) {
	if sig == syscall.SIGKILL {
		sb.cg.Kill()
		return
	}
	select {
	case <-sb.exited:
		return
	default:
	}
	kill := exec.Command(sb.runsc, sb.flags("run", "runsc.log", "kill", "--all", sb.id, strconv.Itoa(int(sig)))...)
	kill.Env = sb.cmd.Env
	kill.Run() // a sandbox that is already gone has nothing to signal
}

// Stats reads the sandbox's cgroup.
func (sb *Sandbox) Stats() (Stats, error) { return sb.cg.Stats() }

// Kill ends every process of the sandbox and returns once none is left.
func (sb *Sandbox) Kill() error {
	err := sb.cg.Kill()
	if err == nil {
		<-sb.exited
	}
	return err
}

// UpperDir is the overlay's upper layer: the workspace's changes, as a path
// through a descriptor (the layer is in runsc's mount namespace). Read it after
// Kill; it is gone after Destroy. Empty without a workspace.
func (sb *Sandbox) UpperDir() string {
	if sb.upper == nil {
		return ""
	}
	return "/proc/self/fd/" + strconv.Itoa(int(sb.upper.Fd()))
}

// Destroy kills what is left, removes the cgroup and the state directory, and
// returns how many host tasks of the sandbox could not be killed.
func (sb *Sandbox) Destroy() (survivors int, err error) {
	var errs []error
	if sb.cg != nil {
		if err := sb.cg.Kill(); err != nil {
			errs = append(errs, err)
			if st, serr := sb.cg.Stats(); serr == nil {
				survivors = int(st.Pids)
			}
		}
	}
	if sb.cmd != nil && sb.cmd.Process != nil && survivors == 0 {
		<-sb.exited
	}
	sb.released.Do(func() { close(sb.release) })
	if sb.cg != nil && survivors == 0 {
		if err := sb.cg.Delete(); err != nil {
			errs = append(errs, err)
		}
	}
	if survivors == 0 {
		if err := os.RemoveAll(sb.state); err != nil {
			errs = append(errs, err)
		}
	}
	if sb.lock != nil {
		sb.lock.Close()
	}
	for _, f := range []*os.File{sb.wsDir, sb.upper} {
		if f != nil {
			f.Close()
		}
	}
	return survivors, errors.Join(errs...)
}

// exitStatus reads the command's wait status from runsc's log ("Exiting with
// status: N", the raw status): runsc's own exit code says 128+N for both a death
// by signal N and an exit with that code.
func exitStatus(log string) (syscall.WaitStatus, bool) {
	data, err := os.ReadFile(log)
	if err != nil {
		return 0, false
	}
	const marker = "Exiting with status: "
	i := bytes.LastIndex(data, []byte(marker))
	if i < 0 {
		return 0, false
	}
	line, _, _ := strings.Cut(string(data[i+len(marker):]), "\n")
	n, err := strconv.ParseUint(strings.TrimSpace(line), 10, 32)
	if err != nil {
		return 0, false
	}
	return syscall.WaitStatus(n), true
}

// ErrNotFound and ErrNotExecutable say that runsc could not execute the command.
var (
	ErrNotFound      = errors.New("command not found in the sandbox")
	ErrNotExecutable = errors.New("command cannot be executed in the sandbox")
)

// runscError is runsc's fatal error from its log (or its last warning), or err.
func runscError(log string, err error) error {
	f, ferr := os.Open(log)
	if ferr != nil {
		return err
	}
	defer f.Close()
	var last, fatal string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if _, msg, ok := strings.Cut(l, "FATAL ERROR: "); ok {
			fatal = msg
		} else if strings.HasPrefix(l, "W") || strings.HasPrefix(l, "E") {
			if _, msg, ok := strings.Cut(l, "] "); ok {
				last = msg
			}
		}
	}
	if fatal != "" {
		last = fatal
	}
	if last == "" {
		return err
	}
	if exe := strings.Contains(last, "finding executable") || strings.Contains(last, "failed to load"); exe {
		switch {
		case strings.Contains(last, "no such file or directory"):
			return fmt.Errorf("%w: %s", ErrNotFound, last)
		case strings.Contains(last, "permission denied"), strings.Contains(last, "exec format error"), strings.Contains(last, "is a directory"):
			return fmt.Errorf("%w: %s", ErrNotExecutable, last)
		}
	}
	return errors.New(last)
}

func randomHex() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}
