package nsinit

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/bpf"

	"github.com/agentbox/agentbox/internal/landlock"
)

func TestSpecRoundTrip(t *testing.T) {
	in := &Spec{
		Argv:      []string{"/bin/sh", "-c", "echo 'a,b:c'"},
		Env:       []string{"A=1", "B="},
		Dir:       "/workspace",
		RootFS:    Source{FD: 7},
		Workspace: Workspace{Mode: WorkspaceOverlay, Lower: Source{FD: 5}, State: Source{Path: "/tmp/x"}, ReadOnly: []string{".git", "sub/repo"}},
		TmpSize:   1 << 20,
		ShmSize:   2 << 20,
		Rlimits:   []Rlimit{{Resource: 4, Cur: 0, Max: 0}, {Resource: 7, Cur: 64, Max: 128}},
		Landlock:  landlock.Ruleset{ReadExec: []string{"/"}, ScopeSignals: true},
		Seccomp:   []bpf.RawInstruction{{Op: 0x20, K: 4}, {Op: 0x15, Jt: 1, Jf: 2, K: 0xc000003e}, {Op: 0x6, K: 0x7fff0000}},
	}
	var buf bytes.Buffer
	if err := WriteSpec(&buf, in); err != nil {
		t.Fatal(err)
	}
	// Control bytes follow the Spec on the same pipe: ReadSpec must leave them.
	buf.WriteByte(CtlTerminate)
	out, err := ReadSpec(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, out); diff != "" {
		t.Errorf("round trip (-in +out):\n%s", diff)
	}
	if b, err := buf.ReadByte(); err != nil || b != CtlTerminate {
		t.Errorf("byte after spec = %q, %v; want the control byte", b, err)
	}
}

func TestReadSpecRejects(t *testing.T) {
	frame := func(body string) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
		return append(b, body...)
	}
	huge := binary.BigEndian.AppendUint32(nil, maxSpec+1)
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "length"},
		{"short length", []byte{0, 0}, "length"},
		{"truncated body", frame(`{"argv":["x"]}`)[:8], "read spec"},
		{"too large", huge, "exceeds"},
		{"seccomp program not whole instructions", frame(`{"argv":["x"],"seccomp":"AAAAAAAA"}`), "not a whole number"},
		{"seccomp program not base64", frame(`{"argv":["x"],"seccomp":[{"Op":6}]}`), "seccomp program"},
		{"not json", frame("{"), "decode"},
		{"empty argv", frame(`{"argv":[]}`), "empty argv"},
		{"empty argv0", frame(`{"argv":[""]}`), "empty argv"},
		{"persistent with argv", frame(`{"persistent":true,"argv":["x"]}`), "takes no argv"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadSpec(bytes.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ReadSpec = %v, want error containing %q", err, tt.want)
			}
		})
	}
}

func TestEtcFiles(t *testing.T) {
	// The generated users: root, the sandbox user at 1000, nobody. Nothing else,
	// and in particular no line of the host's files.
	want := map[string][]string{
		"passwd": {"root:x:0:0:", "agentbox:x:1000:1000:", "nobody:x:65534:65534:"},
		"group":  {"root:x:0:", "agentbox:x:1000:", "nogroup:x:65534:"},
	}
	for file, prefixes := range want {
		lines := strings.Split(strings.TrimSuffix(etcFiles[file], "\n"), "\n")
		if len(lines) != len(prefixes) {
			t.Errorf("%s has %d lines, want %d", file, len(lines), len(prefixes))
			continue
		}
		for i, p := range prefixes {
			if !strings.HasPrefix(lines[i], p) {
				t.Errorf("%s line %d = %q, want prefix %q", file, i, lines[i], p)
			}
		}
	}
	if !strings.Contains(etcFiles["hosts"], "127.0.0.1\tlocalhost "+Hostname) {
		t.Errorf("hosts = %q", etcFiles["hosts"])
	}
	if etcFiles["resolv.conf"] != "" {
		t.Errorf("resolv.conf = %q, want empty", etcFiles["resolv.conf"])
	}
}
