package image

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// IDs returns the uid and gid, as the image knows them, of the user its config
// names ("" is root; "name", "uid", "name:group" or "uid:gid", looked up in the
// image's /etc/passwd and /etc/group). A sandbox maps the layer owner IDBase+uid
// to its own user, so that user owns what the image's user owns.
func (im *Image) IDs() (uid, gid int, err error) {
	user, group, _ := strings.Cut(im.Config.User, ":")
	if user == "" {
		user = "0"
	}
	uid, gid = -1, 0
	if n, err := strconv.Atoi(user); err == nil {
		uid = n
	}
	if ent, err := im.lookup("etc/passwd", user); err == nil {
		uid, _ = strconv.Atoi(ent[2])
		gid, _ = strconv.Atoi(ent[3])
	} else if uid < 0 || !errors.Is(err, os.ErrNotExist) {
		return 0, 0, fmt.Errorf("image user %q: %w", im.Config.User, err)
	}
	if group != "" {
		if n, err := strconv.Atoi(group); err == nil {
			gid = n
		} else if ent, err := im.lookup("etc/group", group); err == nil {
			gid, _ = strconv.Atoi(ent[2])
		} else {
			return 0, 0, fmt.Errorf("image group %q: %w", group, err)
		}
	}
	if uid < 0 || uid >= IDCount || gid < 0 || gid >= IDCount {
		return 0, 0, fmt.Errorf("image user %q: ids %d:%d outside [0, %d)", im.Config.User, uid, gid, IDCount)
	}
	return uid, gid, nil
}

// lookup finds the entry of name (or numeric id) in an /etc/passwd-style file of
// the image. os.ErrNotExist if there is none.
func (im *Image) lookup(file, name string) ([]string, error) {
	dirs := make([]string, len(im.Layers))
	for i, l := range im.Layers {
		dirs[i] = l.Dir
	}
	b, err := readMerged(dirs, file, 4<<20)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Split(sc.Text(), ":")
		if len(f) >= 4 && (f[0] == name || f[2] == name) {
			if _, err := strconv.Atoi(f[2]); err == nil {
				return f, nil
			}
		}
	}
	return nil, fmt.Errorf("no %q in /%s: %w", name, file, os.ErrNotExist)
}
