package image

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// HostIdentity fingerprints what a host base holds, as the cache key of its
// first step: dpkg's status file (which packages, at which versions, with
// which conffiles), then, for every directory under HostDirs and for every
// entry of HostEtc, its path, type, mode, owner, size, modification and change
// times. A directory's times change whenever an entry in it is added, removed,
// renamed or replaced (package upgrades rename new files into place), so a
// host whose packages or files under /usr/local changed gets a new key and
// rebuilds. What it misses is a file rewritten in place with its name and
// directory unchanged; `template build --no-cache` rebuilds regardless. Reading
// every file instead would cost seconds to minutes per build (150,000 files
// under /usr here); walking the directories costs about 0.3 s warm.
func HostIdentity() (string, error) { return hostIdentity("/") }

func hostIdentity(root string) (string, error) {
	h := sha256.New()
	st, err := os.Open(filepath.Join(root, dpkgStatus))
	switch {
	case err == nil:
		fmt.Fprintf(h, "dpkg status\n")
		_, err = io.Copy(h, st)
		st.Close()
		if err != nil {
			return "", fmt.Errorf("host identity: %w", err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("host identity: %w", err)
	}
	entry := func(p string, fi fs.FileInfo) {
		fmt.Fprintf(h, "%q %v %d", p, fi.Mode(), fi.Size())
		if s, ok := fi.Sys().(*syscall.Stat_t); ok {
			fmt.Fprintf(h, " %d:%d %d.%d %d.%d", s.Uid, s.Gid, s.Mtim.Sec, s.Mtim.Nsec, s.Ctim.Sec, s.Ctim.Nsec)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(filepath.Join(root, p))
			fmt.Fprintf(h, " -> %q", target)
		}
		h.Write([]byte{'\n'})
	}
	for _, d := range HostDirs {
		err := filepath.WalkDir(filepath.Join(root, d), func(p string, de fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
					return nil
				}
				return err
			}
			if p != filepath.Join(root, d) && !de.IsDir() {
				return nil
			}
			fi, err := de.Info()
			if err != nil {
				return nil // gone meanwhile
			}
			rel, _ := filepath.Rel(root, p)
			entry(rel, fi)
			return nil
		})
		if err != nil {
			return "", fmt.Errorf("host identity: %w", err)
		}
	}
	for _, e := range HostEtc {
		if fi, err := os.Lstat(filepath.Join(root, "etc", e)); err == nil {
			entry(filepath.Join("etc", e), fi)
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
