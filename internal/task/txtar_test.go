package task

import (
	"io/fs"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseTxtar(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []archiveFile
		err  bool
	}{
		{name: "comment only", in: "just a comment\n", want: nil},
		{
			name: "files",
			in:   "comment\n-- a.txt --\nhello\n-- dir/b.go --\npackage b\n\n-- empty --\n-- last --\nno newline",
			want: []archiveFile{{"a.txt", []byte("hello\n")}, {"dir/b.go", []byte("package b\n\n")}, {"empty", []byte{}}, {"last", []byte("no newline")}},
		},
		{name: "marker lookalikes stay data", in: "-- a --\n--x --\n-- y--\n", want: []archiveFile{{"a", []byte("--x --\n-- y--\n")}}},
		{name: "duplicate", in: "-- a --\n-- a --\n", err: true},
		{name: "escaping name", in: "-- ../a --\nx\n", err: true},
		{name: "absolute name", in: "-- /etc/passwd --\nx\n", err: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseTxtar([]byte(tc.in))
			if (err != nil) != tc.err {
				t.Fatalf("parseTxtar error %v, want error %v", err, tc.err)
			}
			if diff := cmp.Diff(tc.want, got); !tc.err && diff != "" {
				t.Fatalf("parseTxtar (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzParseTxtar(f *testing.F) {
	f.Add([]byte("c\n-- a --\nx\n-- b/c --\ny\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		files, err := parseTxtar(data)
		if err != nil {
			return
		}
		for _, af := range files {
			if !fs.ValidPath(af.Name) || af.Name == "." {
				t.Fatalf("accepted the name %q", af.Name)
			}
		}
	})
}
