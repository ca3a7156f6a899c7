package image

import (
	"fmt"
	"strings"
)

// Linux limits on names (NAME_MAX, PATH_MAX); checked here to give a clear error.
const (
	maxComponent = 255
	maxPath      = 4095
)

// cleanName turns an archive entry name into a path relative to the layer
// directory, "" being the directory itself. Leading "/" and "./" and empty or "."
// components are dropped: an absolute name lands inside the layer, as GNU tar and
// container runtimes extract it. A ".." component is refused even where it would
// stay inside: no legitimate layer has one, and refusing is simpler to trust than
// resolving.
func cleanName(name string) (string, error) {
	if len(name) > maxPath {
		return "", fmt.Errorf("%w: name is %d bytes, longer than Linux's %d", ErrUnsafe, len(name), maxPath)
	}
	if strings.IndexByte(name, 0) >= 0 {
		return "", fmt.Errorf("%w: name holds a NUL byte", ErrUnsafe)
	}
	var parts []string
	for c := range strings.SplitSeq(name, "/") {
		switch {
		case c == "" || c == ".":
			continue
		case c == "..":
			return "", fmt.Errorf("%w: name has a \"..\" component", ErrUnsafe)
		case len(c) > maxComponent:
			return "", fmt.Errorf("%w: a name component is %d bytes, longer than Linux's %d", ErrUnsafe, len(c), maxComponent)
		}
		parts = append(parts, c)
	}
	return strings.Join(parts, "/"), nil
}

// splitName splits a cleaned, non-empty name into its parent ("" for the layer
// root) and its last component.
func splitName(name string) (dir, base string) {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return "", name
	}
	return name[:i], name[i+1:]
}

// OCI whiteouts (image-spec layer.md): ".wh.NAME" deletes NAME of the layers
// below; ".wh..wh..opq" hides every entry of the directory below this layer.
const (
	whiteoutPrefix = ".wh."
	whiteoutMeta   = ".wh..wh."
	whiteoutOpaque = ".wh..wh..opq"
)

// Overlayfs's marks, in the user.overlay.* namespace: the sandbox mounts its
// overlay inside a user namespace, with "userxattr", where trusted.overlay.*
// needs a privilege it does not have. A whiteout is a 0/0 character device.
const (
	xattrOpaque  = "user.overlay.opaque"
	overlayXattr = "user.overlay."
)

// keepXattr reports whether an archive xattr is reproduced on the layer file.
// Only user.* is kept, and never user.overlay.*, which the sandbox's overlay would
// read as its own marks (opaque, whiteout, redirect). security.capability (file
// capabilities, a set-ID bit by other means), security.selinux, trusted.* and
// POSIX ACLs (which name host ids) are dropped and recorded.
func keepXattr(name string) bool {
	return strings.HasPrefix(name, "user.") && !strings.HasPrefix(name, overlayXattr)
}
