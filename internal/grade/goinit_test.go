package grade

import (
	"io/fs"
	"path"
	"strings"
	"testing"
)

func TestReviewGoInit(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		want []string // tokens, in order
	}{
		{"init exits", "package p\nimport \"os\"\nfunc init() { os.Exit(0) }\n", []string{"os.Exit"}},
		{"aliased, through a variable and a helper", "package p\nimport (\n osx \"os\"\n \"fmt\"\n)\nvar _ = setup()\nfunc setup() int { fmt.Println(helper()); return 0 }\nfunc helper() string { return osx.Getenv(\"X\") }\n",
			[]string{"fmt.Println", "os.Getenv"}},
		{"a method reached from a func literal", "package p\nimport \"syscall\"\ntype T struct{}\nfunc (T) run() { syscall.Exit(0) }\nvar _ = func() int { T{}.run(); return 0 }()\n",
			[]string{"syscall.Exit"}},
		{"a function value, not a call", "package p\nimport \"os\"\nvar quit = os.Exit\n", []string{"os.Exit"}},
		{"ordinary initialization", "package p\nimport (\n \"errors\"\n \"regexp\"\n)\nvar ErrX = errors.New(\"x\")\nvar re = regexp.MustCompile(\"a+\")\nvar table = build()\nfunc build() map[string]int { return map[string]int{\"a\": 1} }\n", nil},
		{"reflection", "package p\nimport \"reflect\"\ntype T struct{}\nvar _ = reflect.ValueOf(T{}).MethodByName(\"R\" + \"un\")\n", []string{"reflect.ValueOf"}},
		{"exit outside initialization", "package p\nimport \"os\"\nfunc Main() { os.Exit(1) }\n", nil},
		{"does not parse", "package p\nfunc init( {\n", nil},
	} {
		files := map[string]string{"pkg/p.go": tc.src, "pkg/p_test.go": "package p\nimport \"os\"\nfunc init() { os.Exit(0) }\n"}
		read := func(p string) ([]byte, error) {
			if s, ok := files[p]; ok {
				return []byte(s), nil
			}
			return nil, fs.ErrNotExist
		}
		list := func(dir string) ([]string, error) {
			var names []string
			for p := range files {
				if path.Dir(p) == dir {
					names = append(names, path.Base(p))
				}
			}
			return names, nil
		}
		var got []string
		for _, f := range reviewGoInit([]string{"pkg/p.go"}, read, list) {
			got = append(got, strings.TrimPrefix(f.Token, "package initialization reaches "))
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: found %q, want %q (test files never count)", tc.name, got, tc.want)
		}
	}
}
