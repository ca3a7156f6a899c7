package nsinit

// mountEtc writes the generated /etc into the new root and mirrors the few host
// entries listed in etcHost from the root file system at prefix. Over an image
// (rf.image) the image's /etc stays, with the generated files bound over it; a
// build (keepUsers) keeps the image's own passwd and group, which its packages
// need.
func mountEtc(prefix string, rf *rootFiles, keepUsers bool) error {
	for name, content := range etcFiles {
		if keepUsers && (name == "passwd" || name == "group") {
			continue
		}
		if err := rf.put("/etc/"+name, []byte(content)); err != nil {
			return err
		}
	}
	if rf.image {
		return nil
	}
	for _, name := range etcHost {
		if err := mirror(prefix+"/etc/"+name, base+"/etc/"+name, "/etc/"+name); err != nil {
			return err
		}
	}
	return nil
}
