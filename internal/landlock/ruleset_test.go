package landlock

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestValidate(t *testing.T) {
	ok := Ruleset{ReadExec: []string{"/"}, ReadWrite: []string{"/tmp"}, ReadWriteFiles: []string{"/dev/null"}}
	tests := []struct {
		name      string
		mutate    func(*Ruleset)
		wantField string // "" with wantErr: not a PathError
		wantPath  string
		wantErr   bool
	}{
		{name: "ok", mutate: func(*Ruleset) {}},
		{name: "zero value", mutate: func(r *Ruleset) { *r = Ruleset{} }, wantErr: true},
		{name: "empty ReadExec", mutate: func(r *Ruleset) { r.ReadExec = nil }, wantErr: true},
		{name: "relative ReadExec", mutate: func(r *Ruleset) { r.ReadExec = []string{"/", "usr"} },
			wantErr: true, wantField: "ReadExec", wantPath: "usr"},
		{name: "relative ReadWrite", mutate: func(r *Ruleset) { r.ReadWrite = []string{"./workspace"} },
			wantErr: true, wantField: "ReadWrite", wantPath: "./workspace"},
		{name: "empty ReadWriteFiles entry", mutate: func(r *Ruleset) { r.ReadWriteFiles = []string{""} },
			wantErr: true, wantField: "ReadWriteFiles", wantPath: ""},
		{name: "AllowAllTCP with bind list", mutate: func(r *Ruleset) { r.AllowAllTCP, r.AllowTCPBind = true, []uint16{0} }, wantErr: true},
		{name: "AllowAllTCP with connect list", mutate: func(r *Ruleset) { r.AllowAllTCP, r.AllowTCPConnect = true, []uint16{80} }, wantErr: true},
		{name: "AllowAllTCP alone", mutate: func(r *Ruleset) { r.AllowAllTCP = true }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ok
			tt.mutate(&r)
			err := r.validate()
			if (err != nil) != tt.wantErr {
				t.Fatalf("validate() = %v, want error: %v", err, tt.wantErr)
			}
			if err == nil {
				return
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not match ErrInvalid", err)
			}
			checkPathError(t, err, tt.wantField, tt.wantPath)
		})
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link-to-dir")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	tests := []struct {
		name      string
		r         Ruleset
		wantField string // "": no error
		wantPath  string
		wantIs    error
	}{
		{name: "ok", r: Ruleset{ReadExec: []string{"/"}, ReadWrite: []string{dir}, ReadWriteFiles: []string{file}}},
		{name: "symlink to dir is followed", r: Ruleset{ReadExec: []string{"/"}, ReadWrite: []string{link}}},
		{name: "missing ReadWrite", r: Ruleset{ReadExec: []string{"/"}, ReadWrite: []string{missing}},
			wantField: "ReadWrite", wantPath: missing, wantIs: fs.ErrNotExist},
		{name: "missing ReadWriteFiles", r: Ruleset{ReadExec: []string{"/"}, ReadWriteFiles: []string{missing}},
			wantField: "ReadWriteFiles", wantPath: missing, wantIs: fs.ErrNotExist},
		{name: "file as ReadExec", r: Ruleset{ReadExec: []string{file}},
			wantField: "ReadExec", wantPath: file, wantIs: errNotDir},
		{name: "file as ReadWrite", r: Ruleset{ReadExec: []string{"/"}, ReadWrite: []string{file}},
			wantField: "ReadWrite", wantPath: file, wantIs: errNotDir},
		{name: "dir as ReadWriteFiles", r: Ruleset{ReadExec: []string{"/"}, ReadWriteFiles: []string{dir}},
			wantField: "ReadWriteFiles", wantPath: dir, wantIs: errIsDir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.r.check()
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("check() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || !errors.Is(err, tt.wantIs) {
				t.Errorf("check() = %v, want ErrInvalid and %v", err, tt.wantIs)
			}
			checkPathError(t, err, tt.wantField, tt.wantPath)
		})
	}
}

func checkPathError(t *testing.T, err error, field, path string) {
	t.Helper()
	var pe *PathError
	if !errors.As(err, &pe) {
		if field != "" {
			t.Errorf("error %v is not a *PathError", err)
		}
		return
	}
	if pe.Field != field || pe.Path != path {
		t.Errorf("PathError{Field: %q, Path: %q}, want {%q, %q}", pe.Field, pe.Path, field, path)
	}
}

func TestAppliedString(t *testing.T) {
	tests := []struct {
		a    Applied
		want string
	}{
		{Applied{}, "abi=0"},
		{Applied{ABI: 7, Refer: true, Truncate: true, IoctlDev: true, Net: true, ScopeSignals: true, ScopeAbstractUnix: true},
			"abi=7 refer truncate ioctl_dev net scope_signals scope_abstract_unix"},
		{Applied{ABI: 3, Refer: true, Truncate: true}, "abi=3 refer truncate"},
	}
	for _, tt := range tests {
		if got := tt.a.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.a, got, tt.want)
		}
	}
}
