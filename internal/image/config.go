package image

import (
	"encoding/json"
	"runtime"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// debianPath is the PATH of a Debian root, as Debian's container images set it.
const debianPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// newConfig writes the OCI config of an image made here (a bootstrap, a build):
// no creation time, so the same layers and settings give the same image id.
func newConfig(layers []v1.Hash, c Config) ([]byte, error) {
	cf := v1.ConfigFile{
		Architecture: runtime.GOARCH,
		OS:           "linux",
		RootFS:       v1.RootFS{Type: "layers", DiffIDs: layers},
		Config: v1.Config{
			Env:        c.Env,
			WorkingDir: c.WorkingDir,
			User:       c.User,
			Entrypoint: c.Entrypoint,
			Cmd:        c.Cmd,
		},
	}
	if cf.RootFS.DiffIDs == nil {
		cf.RootFS.DiffIDs = []v1.Hash{}
	}
	return json.Marshal(cf)
}
