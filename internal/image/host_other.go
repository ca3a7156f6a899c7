//go:build !linux

package image

// HostIdentity needs Linux (a host base is mounted only there).
func HostIdentity() (string, error) {
	return "", ErrUnsupported
}
