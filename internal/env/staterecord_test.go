package env

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/sandbox"
)

// FuzzReadRecord: whatever a state record holds, readRecord returns an error or
// a record of this version naming its own directory, whose options check as a
// Create's would; it never panics.
func FuzzReadRecord(f *testing.F) {
	const id = "env-0123456789abcdef01234567"
	good, _ := json.Marshal(stateRecord{Version: recordVersion, ID: id, Options: CreateOptions{Owner: Owner{Tenant: "alice"}, Labels: map[string]string{"k": "v"}},
		Created: time.Unix(1, 0), Sandbox: sandbox.Leftover{State: "/tmp/agentbox-state/sb-1", UID: 1 << 21}})
	f.Add(good)
	f.Add([]byte(`{"version":1,"id":"` + id + `","options":{"owner":{"tenant":"a"},"limits":{"memory":-1}}}`))
	f.Add([]byte(`{"version":1,"id":"` + id + `","options":{"owner":{"tenant":"a"},"mounts":[{"source":"/","target":"/etc"}]}}`))
	f.Add([]byte(`{"version":1,"id":"` + id + `"} trailing`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		state := t.TempDir()
		m := &Manager{cfg: Config{StateDir: state}}
		dir := filepath.Join(m.envsDir(), id)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, recordName), b, 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := m.readRecord(id)
		if err != nil {
			return
		}
		if r.Version != recordVersion || r.ID != id || json.Valid(b) == false {
			t.Fatalf("accepted %q as %+v", b, r)
		}
		if o := r.Options; o.Owner.Tenant != "" {
			if err := validate(&o); err != nil {
				t.Fatalf("accepted options that do not check: %v", err)
			}
		}
	})
}
