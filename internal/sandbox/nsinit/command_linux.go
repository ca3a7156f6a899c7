package nsinit

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// defaultPath is searched when the command's environment has no PATH.
const defaultPath = "/usr/local/bin:/usr/bin:/bin"

// lookPath resolves a command name the way execvp does, with PATH taken from the
// command's environment (the init's own is empty) and relative paths taken from the
// command's working directory dir. A name with a slash is not searched for. It
// reports ENOENT when nothing is found and EACCES when something was found but is not
// executable, so the caller can map them to exit codes 127 and 126.
func lookPath(name, dir string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		p := abs(name, dir)
		return p, checkExecutable(p)
	}
	path, ok := envValue(env, "PATH")
	if !ok {
		path = defaultPath
	}
	var denied error
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		p := abs(filepath.Join(d, name), dir)
		err := checkExecutable(p)
		if err == nil {
			return p, nil
		}
		if err == unix.EACCES {
			denied = err
		}
	}
	if denied != nil {
		return "", denied
	}
	return "", unix.ENOENT
}

// abs makes p absolute relative to dir.
func abs(p, dir string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// checkExecutable reports ENOENT if p does not exist and EACCES if it is not an
// executable regular file. AT_EACCESS checks with the file system identity (see
// asCommandUser), not the init's real uid.
func checkExecutable(p string) error {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return unix.EACCES
	}
	return unix.Faccessat(unix.AT_FDCWD, p, unix.X_OK, unix.AT_EACCESS)
}

// findCommand checks the working directory dir and resolves argv0 as the command's
// user would (see asCommandUser): a missing directory fails at stage "chdir", a
// command that cannot be found or run at stage "exec" with ENOENT or EACCES.
func findCommand(argv0, dir string, env []string) (path string, err error) {
	err = asCommandUser(func() error {
		if fi, err := os.Stat(dir); err != nil {
			return at("chdir", err)
		} else if !fi.IsDir() {
			return at("chdir", unix.ENOTDIR)
		}
		path, err = lookPath(argv0, dir, env)
		return at("exec", err)
	})
	return path, err
}

// envValue returns the last value of key in env, as getenv would see it.
func envValue(env []string, key string) (string, bool) {
	val, found := "", false
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			val, found = v, true
		}
	}
	return val, found
}

// startCommand starts the command as the sandbox user in its own session with the
// init's stdio, its working directory and environment, and its limits. A command
// that cannot be found or run fails at stage "exec" with ENOENT or EACCES.
func startCommand(s *Spec) (int, error) {
	path, err := findCommand(s.Argv[0], s.Dir, s.Env)
	if err != nil {
		return 0, err
	}
	lent, err := setRlimits(s.Rlimits)
	if err != nil {
		return 0, err
	}
	env := s.Env
	if env == nil {
		env = []string{}
	}
	// The host's umask would otherwise leak in; 022 is what programs expect.
	syscall.Umask(0o022)
	pid, err := syscall.ForkExec(path, s.Argv, &syscall.ProcAttr{
		Dir:   s.Dir,
		Env:   env,
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Setsid: true, Credential: commandCred()},
	})
	if err != nil {
		return 0, at("exec", err)
	}
	if err := finishRlimits(pid, s.Rlimits, lent); err != nil {
		_ = unix.Kill(pid, unix.SIGKILL)
		return pid, err
	}
	return pid, nil
}
