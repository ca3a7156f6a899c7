package cgroup

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// mountEntry is one cgroup or cgroup2 line of /proc/self/mountinfo.
type mountEntry struct {
	point  string   // mount point
	fstype string   // "cgroup" or "cgroup2"
	opts   []string // super options; a v1 hierarchy lists its controllers here
}

// parseMountinfo returns the cgroup and cgroup2 mounts in the format of
// proc_pid_mountinfo(5), in file order.
func parseMountinfo(r io.Reader) ([]mountEntry, error) {
	var out []mountEntry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		// 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if sep < 6 || len(fields) < sep+4 {
			return nil, fmt.Errorf("mountinfo line %d: malformed", n)
		}
		fstype := fields[sep+1]
		if fstype != "cgroup" && fstype != "cgroup2" {
			continue
		}
		out = append(out, mountEntry{
			point:  unescapeOctal(fields[4]),
			fstype: fstype,
			opts:   strings.Split(fields[sep+3], ","),
		})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	return out, nil
}

// unescapeOctal undoes the kernel's \ooo escaping of spaces, tabs, newlines and
// backslashes in mountinfo paths.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// layout is where the host mounts the hierarchies agentbox uses.
type layout struct {
	mode    Mode
	unified string            // first cgroup2 mount point, "" if none
	v1      map[string]string // controller -> first v1 mount point carrying it
}

// layoutOf classifies the host from its cgroup mounts. Any v1 hierarchy carrying
// one of our controllers makes it v1 (hybrid when a cgroup2 mount exists too); a
// v1 hierarchy with none of them (name=systemd, net_cls) does not count.
func layoutOf(mounts []mountEntry) layout {
	l := layout{v1: map[string]string{}}
	for _, m := range mounts {
		switch m.fstype {
		case "cgroup2":
			if l.unified == "" {
				l.unified = m.point
			}
		case "cgroup":
			for _, c := range controllers {
				if _, seen := l.v1[c]; !seen && slices.Contains(m.opts, c) {
					l.v1[c] = m.point
				}
			}
		}
	}
	switch {
	case len(l.v1) > 0 && l.unified != "":
		l.mode = ModeHybrid
	case len(l.v1) > 0:
		l.mode = ModeV1
	case l.unified != "":
		l.mode = ModeV2
	}
	return l
}

// version is the kind of hierarchy runs are placed in: hybrid hosts keep their
// controllers on v1, so runs go there.
func (l layout) version() int {
	switch l.mode {
	case ModeV1, ModeHybrid:
		return 1
	case ModeV2:
		return 2
	}
	return 0
}
