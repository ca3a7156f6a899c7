package env

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testenv"
)

// TestRecoverRefused: an environment whose options Config.Restorable refuses
// at a restart (its tenant's configuration no longer allows its workspace) is
// not restored: its owner does not find it, the refusal is logged naming it,
// its tenant and its directory, and its files stay on disk, so that a later
// start that allows it again restores it with what it held.
func TestRecoverRefused(t *testing.T) {
	testenv.RequireRoot(t)
	ctx := context.Background()
	state, ws := t.TempDir(), fixture(t)
	m, err := NewManager(Config{StateDir: state, KeepOnClose: true})
	if err != nil {
		t.Fatal(err)
	}
	id := create(t, m, CreateOptions{Workspace: ws}).ID
	other := create(t, m, CreateOptions{}).ID
	sh(t, m, id, "echo kept > f")
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	var log lockedBuffer
	var asked []string
	refused := errors.New("workspace no longer under the tenant's roots")
	m, err = NewManager(Config{StateDir: state, KeepOnClose: true, Log: slog.New(slog.NewTextHandler(&log, nil)),
		Restorable: func(o CreateOptions) error {
			asked = append(asked, o.Workspace)
			if o.Workspace == ws {
				return refused
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	list, err := m.List(ctx, alice, nil)
	if err != nil || len(list) != 1 || list[0].ID != other {
		m.Close()
		t.Fatalf("List after a restart that refuses %s = %+v, %v; want only %s", id, list, err, other)
	}
	if _, err := m.Get(ctx, alice, id); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of the refused environment: %v, want ErrNotFound", err)
	}
	if len(asked) != 2 {
		t.Errorf("Restorable was asked of %q, want both environments", asked)
	}
	if n := m.Refused(); len(n) != 1 || n["alice"] != 1 {
		t.Errorf("Refused = %v, want alice's one", n)
	}
	dir := filepath.Join(state, "envs", id)
	for _, w := range []string{"not restoring", id, "tenant=alice", dir, refused.Error()} {
		if !strings.Contains(log.String(), w) {
			t.Errorf("the log does not name %q:\n%s", w, log.String())
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, recordName)); err != nil {
		t.Fatalf("the refused environment's record was not kept: %v", err)
	}

	m = newManager(t, Config{StateDir: state})
	if n := m.Refused(); len(n) != 0 {
		t.Errorf("Refused once allowed again = %v, want none", n)
	}
	if got := sh(t, m, id, "cat f README.md"); got != "kept\nhello\n" {
		t.Errorf("files once allowed again: %q", got)
	}
}
