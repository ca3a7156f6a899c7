package image

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Debian is a Debian root file system bootstrapped by mmdebstrap from Debian's
// package archive. It is one layer.
type Debian struct {
	Suite string `yaml:"suite" json:"suite"`
	// Variant is mmdebstrap's package set: minbase (the default: the Essential
	// packages and apt), essential, apt, required, important or standard.
	Variant string `yaml:"variant,omitempty" json:"variant,omitempty"`
	// Include adds packages ("name" or "name=version").
	Include []string `yaml:"include,omitempty" json:"include,omitempty"`
	// Mirror is the archive (default DefaultMirror). A snapshot.debian.org URL
	// pins the archive's state, so a rebuild installs the same versions.
	Mirror string `yaml:"mirror,omitempty" json:"mirror,omitempty"`
	// SourceDateEpoch, if set, clamps file times (SOURCE_DATE_EPOCH): the same
	// packages then give the same layer digest.
	SourceDateEpoch *int64 `yaml:"source_date_epoch,omitempty" json:"source_date_epoch,omitempty"`
}

// DefaultMirror is Debian's archive.
const DefaultMirror = "http://deb.debian.org/debian"

var (
	suiteRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9-]*$`) })
	packageRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+(=[A-Za-z0-9.+~:-]+)?$`) })
	variants  = []string{"minbase", "essential", "apt", "required", "important", "standard"}
)

// withDefaults fills in the variant and mirror.
func (d Debian) withDefaults() Debian {
	if d.Variant == "" {
		d.Variant = "minbase"
	}
	if d.Mirror == "" {
		d.Mirror = DefaultMirror
	}
	return d
}

// Check says what is wrong with d, or returns nil.
func (d Debian) Check() error {
	d = d.withDefaults()
	if !suiteRE().MatchString(d.Suite) {
		return fmt.Errorf("debian suite %q: want a suite or codename such as bookworm", d.Suite)
	}
	if !slices.Contains(variants, d.Variant) {
		return fmt.Errorf("debian variant %q: want one of %s", d.Variant, strings.Join(variants, ", "))
	}
	for _, p := range d.Include {
		if err := checkPackage(p); err != nil {
			return err
		}
	}
	u, err := url.Parse(d.Mirror)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.ContainsAny(d.Mirror, " \t\n") {
		return fmt.Errorf("debian mirror %q: want an http or https URL", d.Mirror)
	}
	return nil
}

// checkPackage says what is wrong with a Debian package name ("name" or
// "name=version").
func checkPackage(p string) error {
	if !packageRE().MatchString(p) {
		return fmt.Errorf("debian package %q: want a package name, optionally =version", p)
	}
	return nil
}

// String describes d for an image's record.
func (d Debian) String() string {
	d = d.withDefaults()
	s := SourceDebian + ":" + d.Suite + " (" + d.Variant
	if len(d.Include) > 0 {
		s += "; " + strings.Join(d.Include, ",")
	}
	return s + "; " + d.Mirror + ")"
}
