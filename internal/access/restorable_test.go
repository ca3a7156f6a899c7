package access

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/internal/config"
	"github.com/agentbox/agentbox/internal/env"
)

// TestRestorable (attack: an environment recorded while the tenant's
// configuration allowed it outlives that configuration through a daemon
// restart). A recorded environment is restorable only if its tenant is still
// configured and its workspace, mounts, template and network are within what
// the tenant's current configuration allows; a workspace that now resolves
// outside the roots through a symlink is refused too, and the record's
// options are not changed by the check.
func TestRestorable(t *testing.T) {
	dir := t.TempDir()
	kept, dropped, outside := filepath.Join(dir, "kept"), filepath.Join(dir, "dropped"), t.TempDir()
	for _, d := range []string{filepath.Join(kept, "ws"), filepath.Join(dropped, "ws"), filepath.Join(kept, "mnt")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(kept, "link")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Tenants: map[string]config.Tenant{
		"alice": {WorkspaceRoots: []string{kept}, MountRoots: []string{filepath.Join(kept, "mnt")}, Templates: config.TemplateAccess{Use: []string{"py"}}},
	}}
	ok := Restorable(cfg)
	alice := env.Owner{Tenant: "alice"}
	for _, tc := range []struct {
		name string
		o    env.CreateOptions
		want bool
	}{
		{"under a current root", env.CreateOptions{Owner: alice, Workspace: filepath.Join(kept, "ws")}, true},
		{"a preset, a template it may use, a mount under its roots", env.CreateOptions{Owner: alice, Preset: "p", Template: "py",
			Mounts: []env.Mount{{Source: filepath.Join(kept, "mnt"), Target: "/data"}}}, true},
		{"its root was removed", env.CreateOptions{Owner: alice, Workspace: filepath.Join(dropped, "ws")}, false},
		{"a root's symlink now leads out", env.CreateOptions{Owner: alice, Workspace: link}, false},
		{"the workspace is gone", env.CreateOptions{Owner: alice, Workspace: filepath.Join(kept, "gone")}, false},
		{"the tenant was removed", env.CreateOptions{Owner: env.Owner{Tenant: "bob"}, Preset: "p"}, false},
		{"a mount outside its roots", env.CreateOptions{Owner: alice, Mounts: []env.Mount{{Source: filepath.Join(dropped, "ws"), Target: "/data"}}}, false},
		{"a template it may no longer use", env.CreateOptions{Owner: alice, Template: "go"}, false},
		{"a network it is no longer given", env.CreateOptions{Owner: alice, Network: &env.Network{Allow: []string{"pypi"}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mounts := append([]env.Mount(nil), tc.o.Mounts...)
			err := ok(tc.o)
			if (err == nil) != tc.want {
				t.Fatalf("Restorable = %v, want restorable %v", err, tc.want)
			}
			if err != nil && !errors.Is(err, ErrForbidden) && !errors.Is(err, env.ErrInvalid) {
				t.Errorf("refused with %v: want ErrForbidden or env.ErrInvalid", err)
			}
			for i := range mounts {
				if tc.o.Mounts[i] != mounts[i] {
					t.Errorf("the record's mount %d changed: %+v, was %+v", i, tc.o.Mounts[i], mounts[i])
				}
			}
		})
	}
}
