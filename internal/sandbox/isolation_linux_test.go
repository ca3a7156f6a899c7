package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
)

// lines runs script in a default sandbox, requires exit 0, and returns stdout's lines.
func lines(t *testing.T, script string) []string {
	t.Helper()
	r := sh(t, script)
	if r.exit.ExitCode != 0 || r.exit.SetupErr != nil {
		t.Fatalf("script failed: %+v\nstdout: %s\nstderr: %s", r.exit, r.stdout, r.stderr)
	}
	return strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
}

// TestIdentity: the command is uid/gid 1000 with no supplementary group inside, and
// on the host it is an unprivileged uid from the high range, never root. The init
// runs under the next host uid, as uid 0 of the user namespace, with every
// capability of that namespace for its setup: the kernel then keeps the commands,
// of another uid, from steering it (prlimit, setpriority, kill...).
func TestIdentity(t *testing.T) {
	r := startWith(t, Config{Argv: []string{"/bin/sh", "-c", "id -u; id -g; id -G; read x"}}, true)
	// While the command waits on stdin, look at it from the host.
	child := waitForChild(t, r.sb.Pid())
	for _, p := range []struct{ pid, id int }{{r.sb.Pid(), r.sb.HostUID() + 1}, {child, r.sb.HostUID()}} {
		st := hostStatus(t, p.pid)
		for _, key := range []string{"Uid", "Gid"} {
			ids := strings.Fields(st[key])
			if len(ids) != 4 {
				t.Fatalf("pid %d %s %q", p.pid, key, st[key])
			}
			for _, u := range ids {
				if n, _ := strconv.Atoi(u); n != p.id || n < hostIDMin || n >= hostIDMax {
					t.Errorf("pid %d: host %s %s, want %d in [%d, %d)", p.pid, key, u, p.id, hostIDMin, hostIDMax)
				}
			}
		}
		if strings.TrimSpace(st["Groups"]) != "" {
			t.Errorf("pid %d: host supplementary groups %q, want none (host group 0 must not follow)", p.pid, st["Groups"])
		}
	}
	res := r.finish(t, "go\n")
	if got := res.stdout; got != "1000\n1000\n1000\n" {
		t.Errorf("inside: id -u, -g, -G = %q", got)
	}
	if res.exit.InitUID != 0 {
		t.Errorf("init uid %d, want 0", res.exit.InitUID)
	}
	if want := allCaps(t); res.exit.InitCapEff != want {
		t.Errorf("init started with CapEff %#x, want %#x", res.exit.InitCapEff, want)
	}
}

func TestHostname(t *testing.T) {
	got := lines(t, "hostname; cat /etc/hostname")
	if len(got) != 2 || got[0] != "agentbox" || got[1] != "agentbox" {
		t.Errorf("hostname = %q", got)
	}
}

// TestUmask: the command's umask is 022 whatever the host's is.
func TestUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	if got := lines(t, "umask"); len(got) != 1 || got[0] != "0022" {
		t.Errorf("umask = %q", got)
	}
}

// TestReadOnly: / and the system directories are read-only; /tmp, /workspace and
// /dev/shm are the only writable places.
func TestReadOnly(t *testing.T) {
	script := `for p in /x /usr/x /etc/x /dev/x /proc/x /tmp/x /workspace/x /dev/shm/x; do
		if touch $p 2>/dev/null; then echo "$p writable"; else echo "$p denied"; fi
	done`
	want := []string{"/x denied", "/usr/x denied", "/etc/x denied", "/dev/x denied", "/proc/x denied",
		"/tmp/x writable", "/workspace/x writable", "/dev/shm/x writable"}
	if got := lines(t, script); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestEtc: /etc is the generated one: the host's users, shadow file and machine
// identity are not visible, while what programs need (libc's loader cache, CA
// certificates, the alternatives links) is.
func TestEtc(t *testing.T) {
	script := `cat /etc/passwd; echo --; getent passwd 1000; id -un
		for f in /etc/shadow /etc/machine-id /etc/sudoers /etc/ssh /etc/ssl/private; do test -e $f && echo "$f present"; done
		for f in /etc/ld.so.cache /etc/ssl/certs/ca-certificates.crt /etc/alternatives /etc/nsswitch.conf /etc/resolv.conf; do test -e $f || echo "$f missing"; done
		test -s /etc/resolv.conf && echo "resolv.conf not empty"
		grep -c . /etc/passwd`
	got := lines(t, script)
	out := strings.Join(got, "\n")
	if strings.Contains(out, "cloudsdk") || strings.Contains(out, "postgres") || strings.Contains(out, "present") ||
		strings.Contains(out, "missing") || strings.Contains(out, "not empty") {
		t.Errorf("host /etc leaked or generated /etc incomplete:\n%s", out)
	}
	if !strings.Contains(out, "agentbox:x:1000:1000:agentbox:/tmp:/bin/sh\nagentbox\n3") {
		t.Errorf("passwd lookup:\n%s", out)
	}
}

// TestHostPathsAbsent: nothing of the host's /root, /home, /var, /run, /sys or the
// repository is reachable.
func TestHostPathsAbsent(t *testing.T) {
	wd, _ := os.Getwd()
	paths := []string{"/root", "/home", "/var", "/run", "/sys", "/mnt", "/srv", "/opt", "/boot", "/work", wd}
	script := "for p in " + strings.Join(paths, " ") + "; do test -e $p && echo $p; done; ls -A /"
	got := lines(t, script)
	want := "bin dev etc lib lib64 proc sbin tmp usr workspace"
	if strings.Join(got, " ") != want {
		t.Errorf("visible: %q, want only the root listing %q", got, want)
	}
}

// TestProc: /proc shows the sandbox's processes only, with the init as pid 1.
func TestProc(t *testing.T) {
	got := lines(t, `tr '\0' ' ' < /proc/1/cmdline; echo; ls /proc | grep -c '^[0-9]*$'; cat /proc/self/stat | cut -d' ' -f1`)
	if len(got) != 3 || strings.TrimSpace(got[0]) != nsinit.Argv0Init {
		t.Fatalf("got %q", got)
	}
	// pid 1, the shell, ls/grep/cat of the pipeline: a handful, not the host's.
	if n, _ := strconv.Atoi(got[1]); n < 2 || n > 6 {
		t.Errorf("%s processes visible", got[1])
	}
	// The init's threads take the first pids; the host's pids are far larger.
	if n, _ := strconv.Atoi(got[2]); n > 64 {
		t.Errorf("command pid %s, want a small pid of a fresh namespace", got[2])
	}
}

// TestProcMasks: the runc masks. kcore and friends read as /dev/null, acpi is an
// empty read-only directory, /proc/sys and sysrq-trigger cannot be written, and the
// init's memory, executable and environment cannot be opened (it is not dumpable:
// CVE-2019-5736 overwrote the runtime binary through /proc/<pid>/exe).
func TestProcMasks(t *testing.T) {
	var script, want []string
	for _, f := range []string{"kcore", "keys", "timer_list", "sched_debug"} {
		if _, err := os.Stat("/proc/" + f); err != nil {
			continue // not in this kernel: nothing to mask
		}
		script = append(script, fmt.Sprintf(`printf "%s %%s %%s\n" "$(stat -c %%t:%%T /proc/%s)" "$(wc -c < /proc/%s)"`, f, f, f))
		want = append(want, f+" 1:3 0")
	}
	if len(want) < 2 {
		t.Fatalf("only %d maskable files on this kernel", len(want))
	}
	script = append(script, `ls -A /proc/acpi 2>/dev/null | wc -l; touch /proc/acpi/x 2>/dev/null && echo acpi writable
		echo 1 > /proc/sys/kernel/ns_last_pid 2>/dev/null && echo sys writable
		echo h > /proc/sysrq-trigger 2>/dev/null && echo sysrq writable
		grep -E ' /proc/(sys|bus|fs|irq|sysrq-trigger) ' /proc/self/mountinfo | grep -c ' ro,'
		for f in mem exe environ root; do cat /proc/1/$f >/dev/null 2>&1 && echo "/proc/1/$f readable"; done
		echo end`)
	ro := 0
	for _, f := range []string{"sys", "bus", "fs", "irq", "sysrq-trigger"} {
		if _, err := os.Stat("/proc/" + f); err == nil {
			ro++
		}
	}
	want = append(want, "0", strconv.Itoa(ro), "end")
	got := lines(t, strings.Join(script, "\n"))
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestDev: /dev holds exactly the listed nodes and links, and they work. /dev/pts
// is a devpts of the sandbox's own: none of the host's ptys are in it, and
// /dev/tty, with no controlling terminal, opens nothing.
func TestDev(t *testing.T) {
	got := lines(t, `ls -A /dev | tr '\n' ' '; echo; head -c 8 /dev/urandom | wc -c; head -c 4 /dev/zero | od -An -tx1 | tr -d ' '
		echo x > /dev/null && echo null ok; echo x > /dev/full 2>/dev/null || echo full ok; readlink /dev/fd
		ls -A /dev/pts | tr '\n' ' '; echo; readlink /dev/ptmx; sh -c 'exec 3>/dev/tty' 2>/dev/null || echo no tty`)
	want := []string{"fd full null ptmx pts random shm stderr stdin stdout tty urandom zero ", "8", "00000000", "null ok", "full ok", "/proc/self/fd",
		"ptmx ", "pts/ptmx", "no tty"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// TestTmpLimited: /tmp is a private tmpfs of Config.TmpSize, nosuid and nodev.
func TestTmpLimited(t *testing.T) {
	r := runIn(t, Config{
		Argv:    []string{"/bin/sh", "-c", "dd if=/dev/zero of=/tmp/big bs=64k count=64 2>&1 | grep -o 'No space left on device'; ls -s /tmp/big | cut -d' ' -f1; grep ' /tmp ' /proc/self/mountinfo"},
		TmpSize: 1 << 20,
	})
	if !strings.HasPrefix(r.stdout, "No space left on device\n1024\n") {
		t.Errorf("writing 4 MiB to a 1 MiB /tmp: %q", r.stdout)
	}
	if !strings.Contains(r.stdout, "nosuid,nodev") || !strings.Contains(r.stdout, "size=1024k") {
		t.Errorf("/tmp mount: %q", r.stdout)
	}
}

// TestNetwork: the network namespace has only lo, which is up (a UDP packet to
// itself arrives); nothing routes out; a TCP server and its client on loopback
// work (the namespace's own loopback: test suites start servers there).
func TestNetwork(t *testing.T) {
	py := `
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
s.sendto(b"ping", s.getsockname())
print("udp", s.recv(4).decode())
try:
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("8.8.8.8", 53))
    print("out reachable")
except OSError as e:
    print("out", e.errno)
srv = socket.socket()
try:
    srv.bind(("127.0.0.1", 0)); srv.listen(); print("tcp bind ok")
    c = socket.socket(); c.connect(srv.getsockname()); print("tcp connect ok")
except OSError as e:
    print("tcp", e.errno)
`
	ifaces := "grep -c : /proc/net/dev; grep : /proc/net/dev | cut -d: -f1 | tr -d ' '"
	r := runIn(t, Config{
		Argv: []string{"/bin/sh", "-c", ifaces + "; python3 -c '" + py + "'"},
		Env:  []string{"PATH=/usr/bin:/bin"},
	})
	if want := fmt.Sprintf("1\nlo\nudp ping\nout %d\ntcp bind ok\ntcp connect ok\n", syscall.ENETUNREACH); r.stdout != want {
		t.Errorf("got\n%s\nwant\n%s\nstderr: %s", r.stdout, want, r.stderr)
	}
}

// TestConfinement: the command holds no capability, every thread of the init only
// the four it needs to start and steer commands of another uid (KILL, SETGID,
// SETUID, SYS_RESOURCE), and all have no_new_privs and run under the seccomp
// filter. The init's bounding set is dropped on the thread that started the
// command (see nsinit's dropCaps).
func TestConfinement(t *testing.T) {
	got := lines(t, `grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status | tr -s '\t' ' '
		for s in /proc/1/task/*/status; do
			tid=$(basename $(dirname $s))
			grep -E '^(CapInh|CapPrm|CapEff|CapAmb|NoNewPrivs|Seccomp):' $s | tr -s '\t' ' ' | sed "s/^/init /"
			[ $tid = 1 ] && grep -E '^CapBnd:' $s | tr -s '\t' ' ' | sed "s/^/init /"
		done | sort | uniq -c | sed 's/^ *//'
		ls /proc/1/task | wc -l`)
	threads := got[len(got)-1]
	n, _ := strconv.Atoi(threads)
	if n < 2 {
		t.Fatalf("init has %s threads: the test would not cover several", threads)
	}
	want := []string{
		"CapInh: 0000000000000000", "CapPrm: 0000000000000000", "CapEff: 0000000000000000",
		"CapBnd: 0000000000000000", "CapAmb: 0000000000000000", "NoNewPrivs: 1", "Seccomp: 2",
		"1 init CapBnd: 0000000000000000",
	}
	for _, f := range []string{"CapAmb: 0000000000000000", "CapEff: 00000000010000e0", "CapInh: 0000000000000000", "CapPrm: 00000000010000e0", "NoNewPrivs: 1", "Seccomp: 2"} {
		want = append(want, threads+" init "+f)
	}
	want = append(want, threads)
	gotSorted := append([]string(nil), got...)
	if strings.Join(sortedCopy(gotSorted), "\n") != strings.Join(sortedCopy(want), "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCgroupNamespace: the command sees its cgroup as the root of every hierarchy.
func TestCgroupNamespace(t *testing.T) {
	for _, l := range lines(t, "cat /proc/self/cgroup") {
		if !strings.HasSuffix(l, ":/") {
			t.Errorf("cgroup line %q: the host's cgroup path is visible", l)
		}
	}
}

// TestNoLeakedFDs: the command gets exactly stdin, stdout and stderr: no descriptor
// of the init (control and status pipes, detached mounts, /dev/null) leaks in.
// Regression test for CVE-2024-21626, where a leaked host directory descriptor let
// the container chdir out of its root.
func TestNoLeakedFDs(t *testing.T) {
	r := runIn(t, Config{Argv: []string{"/bin/ls", "/proc/self/fd"}, Workspace: t.TempDir()})
	// 3 is ls's own handle on /proc/self/fd.
	if r.stdout != "0\n1\n2\n3\n" {
		t.Errorf("descriptors: %q", r.stdout)
	}
}

// TestEnvExact: the command's environment is Config.Env, nothing of the host's.
func TestEnvExact(t *testing.T) {
	t.Setenv("AGENTBOX_SECRET_TEST", "leak")
	r := runIn(t, Config{Argv: []string{"/usr/bin/env"}, Env: []string{"A=1", "B=two words"}})
	if r.stdout != "A=1\nB=two words\n" {
		t.Errorf("env = %q", r.stdout)
	}
	r = runIn(t, Config{Argv: []string{"/usr/bin/env"}})
	if r.stdout != "" {
		t.Errorf("nil Env: env = %q, want empty", r.stdout)
	}
}

// TestStdin: the command reads the stdin it was given.
func TestStdin(t *testing.T) {
	r := startWith(t, Config{Argv: []string{"/usr/bin/tr", "a-z", "A-Z"}}, true)
	res := r.finish(t, "hello\n")
	if res.stdout != "HELLO\n" {
		t.Errorf("stdout %q", res.stdout)
	}
	_ = time.Second
}

// TestProcView: what programs read of /proc still works with the host's figures
// masked: the CPU count (glibc without /sys, Python, coreutils), ps and its
// elapsed times, uptime, and the clocks, which start with the sandbox (time
// namespace; issue 10: /proc/uptime told the host's).
func TestProcView(t *testing.T) {
	got := lines(t, `grep -c '^cpu[0-9]' /proc/stat; nproc; python3 -c 'import os; print(os.cpu_count())'
		[ $(ps -o etimes= -p $$) -lt 60 ] && echo ps; awk '$1 < 60 { print "uptime" }' /proc/uptime; uptime | grep -o 'up 0 min'
		test -s /proc/cmdline && echo cmdline; test -s /proc/interrupts && echo interrupts; ls /proc/pressure | wc -l`)
	n := strconv.Itoa(runtime.NumCPU())
	want := []string{n, n, n, "ps", "uptime", "up 0 min", "0"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %q, want %q (CPU lines, nproc, os.cpu_count, ps etime, uptime, uptime's 'up 0 min', empty pressure dir)", got, want)
	}
}

// TestCommandInPrivateDirectory: a working directory and a program only their
// owner may use (mode 0700, the workspace's owner, which is the sandbox user
// inside) still start, in one-shot and persistent sandboxes: the init, of another
// uid and without file capabilities, checks them with the command's file system
// identity.
func TestCommandInPrivateDirectory(t *testing.T) {
	ws := t.TempDir()
	priv := filepath.Join(ws, "priv")
	if err := os.Mkdir(priv, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(priv, "prog"), []byte("#!/bin/sh\necho ran in $PWD\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(ws, 0o700)
	r := runIn(t, Config{Argv: []string{"./prog"}, Dir: "/workspace/priv", Workspace: ws, Env: []string{"PATH=/usr/bin:/bin"}})
	if r.stdout != "ran in /workspace/priv\n" || r.exit.SetupErr != nil {
		t.Errorf("one-shot: %q %+v", r.stdout, r.exit)
	}
	sb := startPersistent(t, Config{Workspace: ws})
	p, err := sb.Exec(ExecConfig{Argv: []string{"prog"}, Dir: "/workspace/priv", Env: []string{"PATH=/workspace/priv:/usr/bin:/bin"}}, Stdio{})
	if err != nil {
		t.Fatalf("persistent: %v", err)
	}
	if ex, err := p.Wait(); err != nil || ex.ExitCode != 0 {
		t.Errorf("persistent: %+v %v", ex, err)
	}
}
