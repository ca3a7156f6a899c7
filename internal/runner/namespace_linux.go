package runner

import "errors"

// startNamespace is filled in by the isolation work (package sandbox).
func startNamespace(Spec, stdio, *Result) (child, error) {
	return nil, errors.New("namespace isolation is not available in this build yet: use --isolation process")
}
