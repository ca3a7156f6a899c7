package nsinit

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRequestRoundTrip(t *testing.T) {
	in := &Request{Op: OpExec, ID: 7, Argv: []string{"/bin/sh", "-c", "echo"}, Env: []string{"A=1"}, Dir: "/workspace",
		Rlimits: []Rlimit{{Resource: 7, Cur: 64, Max: 128}}}
	b, err := EncodeRequest(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := DecodeRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, out); diff != "" {
		t.Errorf("round trip (-in +out):\n%s", diff)
	}
}

func TestDecodeRequestRejects(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"{", "decode request"},
		{`{"op":"exec","id":1,"dir":"/"}`, "empty argv"},
		{`{"op":"exec","id":1,"argv":[""],"dir":"/"}`, "empty argv"},
		{`{"op":"exec","id":1,"argv":["x"],"dir":"rel"}`, "not absolute"},
		{`{"op":"exec","id":1,"argv":["x"]}`, "not absolute"},
		{`{"op":"format","id":1}`, "unknown op"},
	} {
		if _, err := DecodeRequest([]byte(tt.in)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("DecodeRequest(%s) = %v, want %q", tt.in, err, tt.want)
		}
	}
	huge := &Request{Op: OpExec, Argv: []string{strings.Repeat("x", MaxMessage)}, Dir: "/"}
	if _, err := EncodeRequest(huge); err == nil {
		t.Error("EncodeRequest accepted a request over MaxMessage")
	}
}
