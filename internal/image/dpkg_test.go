package image

import (
	"reflect"
	"testing"
)

func TestParseDpkgStatus(t *testing.T) {
	status := `Package: libc6
Status: install ok installed
Priority: optional
Architecture: amd64
Version: 2.36-9+deb12u10
Description: GNU C Library: Shared libraries
 Contains the standard libraries: Version: not this one

Package: removed
Status: deinstall ok config-files
Version: 1.0

Package: base-files
Status: install ok installed
Architecture: amd64
Version: 12.4+deb12u11
`
	got := parseDpkgStatus([]byte(status))
	want := []Package{{"base-files", "12.4+deb12u11", "amd64"}, {"libc6", "2.36-9+deb12u10", "amd64"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
