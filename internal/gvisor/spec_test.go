package gvisor

import (
	"slices"
	"testing"
)

func TestSpec(t *testing.T) {
	cfg := Config{Argv: []string{"sh"}, UID: 1234, GID: 5678, Env: []string{"A=1"}, Dir: "/workspace/sub/", TmpSize: 1 << 20, Pids: 7,
		CPU: Rlimit{Soft: 3, Hard: 4}, FileSize: 5, NoFile: 6}
	s := spec(cfg, "/state/rootfs", []bind{{source: "/usr", target: "/usr"}, {source: "/state/merged", target: Workspace, write: true}})
	if s.Process.Cwd != "/workspace/sub" || !s.Root.Readonly || s.Hostname != Hostname || !s.Process.NoNewPrivileges {
		t.Fatalf("process %+v root %+v", s.Process, s.Root)
	}
	if c := s.Process.Capabilities; len(c.Bounding)+len(c.Effective)+len(c.Permitted)+len(c.Inheritable)+len(c.Ambient) > 0 {
		t.Errorf("capabilities granted: %+v", c)
	}
	if s.Process.User != (ociUser{UID: 1234, GID: 5678}) {
		t.Errorf("user %+v", s.Process.User)
	}
	want := map[string]ociLimit{
		"RLIMIT_CPU": {"RLIMIT_CPU", 4, 3}, "RLIMIT_FSIZE": {"RLIMIT_FSIZE", 5, 5},
		"RLIMIT_NOFILE": {"RLIMIT_NOFILE", 6, 6}, "RLIMIT_NPROC": {"RLIMIT_NPROC", 7, 7}, "RLIMIT_CORE": {"RLIMIT_CORE", 0, 0},
	}
	for _, l := range s.Process.Rlimits {
		if want[l.Type] != l {
			t.Errorf("rlimit %+v, want %+v", l, want[l.Type])
		}
		delete(want, l.Type)
	}
	if len(want) > 0 {
		t.Errorf("rlimits missing: %v", want)
	}
	mounts := map[string]ociMount{}
	for _, m := range s.Mounts {
		mounts[m.Destination] = m
	}
	if m := mounts["/usr"]; m.Type != "bind" || !slices.Contains(m.Options, "ro") {
		t.Errorf("/usr mounted %+v", m)
	}
	if m := mounts[Workspace]; m.Source != "/state/merged" || !slices.Contains(m.Options, "rw") {
		t.Errorf("/workspace mounted %+v", m)
	}
	if m := mounts["/tmp"]; m.Type != "tmpfs" || !slices.Contains(m.Options, "size=1048576") {
		t.Errorf("/tmp mounted %+v", m)
	}
	if !slices.ContainsFunc(s.Linux.Namespaces, func(n ociNamespace) bool { return n.Type == "network" }) {
		t.Error("no network namespace")
	}
}
