package egress

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// presetPrefix marks an allowlist entry that names a preset: "preset:npm".
const presetPrefix = "preset:"

// presets are the hosts a package manager needs, HTTPS only except Debian's mirrors,
// which apt reaches over HTTP by default (its archives are signed).
var presets = map[string][]string{
	"debian": {"deb.debian.org:80", "deb.debian.org:443", "security.debian.org:80", "security.debian.org:443"},
	"npm":    {"registry.npmjs.org:443"},
	"go":     {"proxy.golang.org:443", "sum.golang.org:443"},
	"pypi":   {"pypi.org:443", "files.pythonhosted.org:443"},
}

// Presets returns the preset names, sorted.
func Presets() []string { return slices.Sorted(maps.Keys(presets)) }

// expandAllow returns the allowlist with every "preset:NAME" entry replaced by the
// preset's patterns.
func expandAllow(entry string) ([]string, error) {
	name, ok := strings.CutPrefix(entry, presetPrefix)
	if !ok {
		return []string{entry}, nil
	}
	hosts, ok := presets[name]
	if !ok {
		return nil, fmt.Errorf("no preset %q (presets: %s)", name, strings.Join(Presets(), ", "))
	}
	return hosts, nil
}
