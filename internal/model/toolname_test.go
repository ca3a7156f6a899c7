package model

import (
	"strings"
	"testing"
)

func TestToolNames(t *testing.T) {
	tools := []ToolDef{{Name: "fs.read"}, {Name: "fs_read"}, {Name: "fs:read"}, {Name: "test-run"}, {Name: strings.Repeat("n", 70)}, {Name: "ünïcode"}}
	history := []Message{{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "1", Name: "old.tool"}}}}
	n := newToolNames(tools, history)
	seen := map[string]string{}
	for _, name := range []string{"fs.read", "fs_read", "fs:read", "test-run", strings.Repeat("n", 70), "ünïcode", "old.tool"} {
		w := n.wire(name)
		if !wireNameRE().MatchString(w) {
			t.Errorf("%q -> %q is not a valid wire name", name, w)
		}
		if other, dup := seen[w]; dup {
			t.Errorf("%q and %q both map to %q", name, other, w)
		}
		seen[w] = name
		if back := n.local(w); back != name {
			t.Errorf("%q -> %q -> %q", name, w, back)
		}
	}
	// Valid names keep their spelling even when an invalid one would collide.
	if n.wire("fs_read") != "fs_read" || n.wire("test-run") != "test-run" {
		t.Errorf("valid names renamed: %q %q", n.wire("fs_read"), n.wire("test-run"))
	}
	if n.wire("fs.read") == "fs_read" {
		t.Errorf("fs.read took the name of the real fs_read tool")
	}
	// A hallucinated tool comes back as the model spelled it.
	if n.local("rm_rf") != "rm_rf" {
		t.Errorf("unknown name changed")
	}
}
