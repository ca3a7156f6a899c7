//go:build !linux

package workspace

import "io/fs"

func platformCheck() error { return ErrUnsupported }

func linkCount(fs.FileInfo) uint64 { return 0 }

const nonblock = 0
