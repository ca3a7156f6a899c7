package model

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseArgs(t *testing.T) {
	cases := []struct {
		name    string
		raw     string
		want    string // compact JSON; "" when an error is expected
		offset  int64
		isError bool
	}{
		{name: "object", raw: `{"path": "a.py", "n": 1}`, want: `{"path":"a.py","n":1}`},
		{name: "empty means no arguments", raw: "", want: `{}`},
		{name: "whitespace", raw: "  \n", want: `{}`},
		{name: "double-encoded", raw: `"{\"path\": \"a.py\"}"`, want: `{"path":"a.py"}`},
		{name: "big numbers kept exactly", raw: `{"n": 12345678901234567890}`, want: `{"n":12345678901234567890}`},
		{name: "unterminated", raw: `{"path": "a.py"`, isError: true, offset: 15},
		{name: "trailing garbage", raw: `{"a":1} x`, isError: true, offset: 9},
		{name: "array", raw: `["a"]`, isError: true, offset: -1},
		{name: "string that is not an object", raw: `"a.py"`, isError: true, offset: -1},
		{name: "null", raw: `null`, isError: true, offset: -1},
		{name: "python dict", raw: `{'path': 'a.py'}`, isError: true, offset: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, aerr := parseArgs([]byte(tc.raw))
			if tc.isError {
				if aerr == nil || aerr.Offset != tc.offset || aerr.Raw != tc.raw {
					t.Fatalf("got %s, %+v; want an ArgsError at %d quoting the input", got, aerr, tc.offset)
				}
				return
			}
			if aerr != nil || string(got) != tc.want {
				t.Fatalf("got %s, %v; want %s", got, aerr, tc.want)
			}
		})
	}
}

func TestArgsErrorRawIsCut(t *testing.T) {
	raw := "{" + strings.Repeat("é", maxRawArgs)
	_, aerr := parseArgs([]byte(raw))
	if aerr == nil || len(aerr.Raw) > maxRawArgs+len("…[cut]") || !utf8.ValidString(aerr.Raw) {
		t.Fatalf("raw of %d bytes, valid UTF-8 %v", len(aerr.Raw), utf8.ValidString(aerr.Raw))
	}
}

func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `"{\"a\":1}"`, `{`, `[]`, ``, `"\"{}\""`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		args, aerr := parseArgs(raw)
		if (args == nil) == (aerr == nil) {
			t.Fatalf("want exactly one of args and error, got %s, %v", args, aerr)
		}
		if aerr == nil {
			var m map[string]any
			if err := json.Unmarshal(args, &m); err != nil {
				t.Fatalf("args %s are not an object: %v", args, err)
			}
		}
	})
}
