package workspace

// Remove removes the file, symlink or empty directory rel. A symlink is removed
// itself, never its target.
func (r *Root) Remove(rel string) error {
	p, err := cleanEntry("remove", rel)
	if err != nil {
		return err
	}
	return pathErr("remove", p, r.root.Remove(p))
}

// RemoveAll removes rel and everything below it, without following symlinks. A
// missing rel is not an error. The workspace root itself cannot be removed.
func (r *Root) RemoveAll(rel string) error {
	p, err := cleanEntry("remove", rel)
	if err != nil {
		return err
	}
	return pathErr("remove", p, r.root.RemoveAll(p))
}
