package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

func init() {
	register("whoami", whoami)
	register("exec-whoami", execWhoami)
	register("devscan", devScan)
	register("env", envDump)
}

// whoami reports this process's identity and privileges from /proc/self/status.
//
// Attempts: "whoami" (always ok: "uid=R,E,S,F gid=… CapEff=… CapPrm=… NoNewPrivs=…
// Seccomp=…").
func whoami(args []string) {
	b, err := readUpTo("/proc/self/status", 1<<16)
	if err != nil {
		fail("whoami", err)
		return
	}
	var fields []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		switch k {
		case "Uid", "Gid", "CapEff", "CapPrm", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp":
			fields = append(fields, k+"="+strings.Join(strings.Fields(v), ","))
		}
	}
	ok("whoami", "%s", strings.Join(fields, " "))
}

// execWhoami executes each PATH as `PATH whoami` (copies of the attacker that the test
// made set-user-ID root or gave file capabilities) and relays what the child reports:
// a child that gained euid 0 or any capability escaped.
//
//	exec-whoami PATH...      Attempts: "exec:PATH"
func execWhoami(args []string) {
	for _, p := range args {
		name := "exec:" + filepath.Base(p)
		out, err := exec.Command(p, "whoami").Output()
		if err != nil {
			fail(name, err)
			continue
		}
		line := ""
		for l := range strings.Lines(string(out)) {
			if strings.HasPrefix(l, "RESULT whoami ok ") {
				line = strings.TrimSpace(strings.TrimPrefix(l, "RESULT whoami ok "))
			}
		}
		ok(name, "%s", strings.Trim(line, `"`))
	}
}

// devScan lists /dev (two levels) with the type and numbers of every node, and stats
// /dev/kvm explicitly.
//
// Attempts: "dev:PATH" (ok: "c MAJOR:MINOR", "b MAJOR:MINOR", "dir", "link TARGET",
// "file"), "kvm".
func devScan(args []string) {
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		names, err := listDir(dir)
		if err != nil {
			fail("dev:"+dir, err)
			return
		}
		for _, n := range names {
			if n == "." || n == ".." {
				continue
			}
			p := dir + "/" + n
			var st unix.Stat_t
			if err := unix.Lstat(p, &st); err != nil {
				fail("dev:"+p, err)
				continue
			}
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFCHR:
				ok("dev:"+p, "c %d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev))
			case unix.S_IFBLK:
				ok("dev:"+p, "b %d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev))
			case unix.S_IFLNK:
				t, _ := os.Readlink(p)
				ok("dev:"+p, "link %s", t)
			case unix.S_IFDIR:
				ok("dev:"+p, "dir")
				if depth < 2 {
					walk(p, depth+1)
				}
			default:
				ok("dev:"+p, "file mode=%o", st.Mode)
			}
		}
	}
	walk("/dev", 1)
	var st unix.Stat_t
	report("kvm", unix.Stat("/dev/kvm", &st), "/dev/kvm exists")
}

// envDump reports this process's environment, one attempt per variable
// ("env:NAME", ok with the value).
func envDump(args []string) {
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		ok("env:"+k, "%s", v)
	}
	fmt.Printf("ENVCOUNT %d\n", len(os.Environ()))
}
