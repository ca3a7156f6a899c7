package image

import (
	"bufio"
	"bytes"
	"sort"
	"strings"
)

// Package is one installed Debian package.
type Package struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Arch    string `json:"arch,omitempty"`
}

// dpkgStatus is where dpkg keeps what is installed.
const dpkgStatus = "var/lib/dpkg/status"

// parseDpkgStatus returns the installed packages of a dpkg status file, sorted.
func parseDpkgStatus(b []byte) []Package {
	var out []Package
	for para := range strings.SplitSeq(string(b), "\n\n") {
		var p Package
		installed := false
		sc := bufio.NewScanner(bytes.NewReader([]byte(para)))
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if !ok || strings.HasPrefix(k, " ") {
				continue
			}
			v = strings.TrimSpace(v)
			switch k {
			case "Package":
				p.Name = v
			case "Version":
				p.Version = v
			case "Architecture":
				p.Arch = v
			case "Status":
				installed = strings.HasSuffix(v, " installed")
			}
		}
		if installed && p.Name != "" {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Name < out[j].Name || out[i].Name == out[j].Name && out[i].Arch < out[j].Arch
	})
	return out
}

// packagesOf reads the installed Debian packages of a stack of layer directories
// (bottom first); nil if it has no dpkg database.
func packagesOf(layers []string) []Package {
	b, err := readMerged(layers, dpkgStatus, 64<<20)
	if err != nil {
		return nil
	}
	return parseDpkgStatus(b)
}
