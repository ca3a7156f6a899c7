package nsinit

import "os"

// mountEtc writes the generated /etc into the new root and mirrors the few host
// entries listed in etcHost from the root file system at prefix.
func mountEtc(prefix string) error {
	if err := os.MkdirAll(base+"/etc", 0o755); err != nil {
		return at("mkdir /etc", err)
	}
	for name, content := range etcFiles {
		if err := os.WriteFile(base+"/etc/"+name, []byte(content), 0o644); err != nil {
			return atf(err, "write /etc/%s", name)
		}
	}
	for _, name := range etcHost {
		if err := mirror(prefix+"/etc/"+name, base+"/etc/"+name, "/etc/"+name); err != nil {
			return err
		}
	}
	return nil
}
