//go:build !linux

package image

func syncfs(p string) error { return ErrUnsupported }
