package attack

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// procInfo is the host's view of one process.
type procInfo struct {
	pid, ppid, uid int
	state          string
	cmdline        string // NULs replaced by spaces
}

// listProcs reads every process of the host. Processes that vanish while it reads are
// skipped.
func listProcs() []procInfo {
	ents, _ := os.ReadDir("/proc")
	var out []procInfo
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		p, ok := readProc(pid)
		if ok {
			out = append(out, p)
		}
	}
	return out
}

func readProc(pid int) (procInfo, bool) {
	dir := "/proc/" + strconv.Itoa(pid)
	status, err := os.ReadFile(dir + "/status")
	if err != nil {
		return procInfo{}, false
	}
	p := procInfo{pid: pid}
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		switch k {
		case "State":
			p.state = f[0]
		case "PPid":
			p.ppid, _ = strconv.Atoi(f[0])
		case "Uid":
			p.uid, _ = strconv.Atoi(f[0])
		}
	}
	cmd, _ := os.ReadFile(dir + "/cmdline")
	p.cmdline = strings.TrimSpace(string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
	return p, true
}

// procsWithTag returns the live (non-zombie) processes whose argv contains tag, except
// agentbox itself (the tag is in the command it was given).
func procsWithTag(tag string) []procInfo {
	var out []procInfo
	for _, p := range listProcs() {
		if tools.agentbox != "" && strings.HasPrefix(p.cmdline, tools.agentbox+" ") {
			continue
		}
		if p.state != "Z" && strings.Contains(p.cmdline, tag) {
			out = append(out, p)
		}
	}
	return out
}

// cgroupDirs maps the lines of /proc/PID/cgroup to directories under /sys/fs/cgroup,
// leaving out those equal to the test's own cgroups (only a run's own cgroups are of
// interest).
func cgroupDirs(pid int) []string {
	own := cgroupLines(os.Getpid())
	var dirs []string
	for ctrl, path := range cgroupLines(pid) {
		if own[ctrl] == path || path == "/" {
			continue // the root is never a run's own cgroup
		}
		dirs = append(dirs, cgroupDir(ctrl, path))
	}
	return dirs
}

// cgroupLines reads /proc/PID/cgroup as controller list → path.
func cgroupLines(pid int) map[string]string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return nil
	}
	m := map[string]string{}
	for line := range strings.Lines(string(b)) {
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(f) == 3 {
			m[f[1]] = f[2]
		}
	}
	return m
}

func cgroupDir(ctrl, path string) string {
	if ctrl == "" {
		if _, err := os.Stat("/sys/fs/cgroup/unified"); err == nil {
			return filepath.Join("/sys/fs/cgroup/unified", path)
		}
		return filepath.Join("/sys/fs/cgroup", path)
	}
	ctrl = strings.TrimPrefix(ctrl, "name=")
	for _, c := range append([]string{ctrl}, strings.Split(ctrl, ",")...) {
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", c)); err == nil {
			return filepath.Join("/sys/fs/cgroup", c, path)
		}
	}
	return filepath.Join("/sys/fs/cgroup", ctrl, path)
}

func readFileString(p string) (string, error) {
	b, err := os.ReadFile(p)
	return string(b), err
}

// bootTime is when the host booted, from /proc/stat's btime.
func bootTime() time.Time {
	s, _ := readFileString("/proc/stat")
	for line := range strings.Lines(s) {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return time.Unix(n, 0)
		}
	}
	return time.Time{}
}
