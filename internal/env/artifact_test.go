package env

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// clock is a settable time for the store's ages.
type clock struct{ t time.Time }

func (c *clock) now() time.Time         { return c.t }
func (c *clock) add(d time.Duration)    { c.t = c.t.Add(d) }
func newClock() *clock                  { return &clock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)} }
func artifactOf(tenant string) Artifact { return Artifact{Owner: Owner{Tenant: tenant}, Name: "f"} }
func storeConfig(dir string, c *clock) Config {
	cfg, _ := Config{StateDir: dir, Now: c.now, ArtifactTTL: time.Hour}.withDefaults()
	return cfg
}

func putString(t *testing.T, s *store, tenant, content string) (Artifact, error) {
	t.Helper()
	return s.put(strings.NewReader(content), int64(len(content)), artifactOf(tenant))
}

func mustPut(t *testing.T, s *store, tenant, content string) Artifact {
	t.Helper()
	a, err := putString(t, s, tenant, content)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// readable reports whether tenant can read ref, checking its content.
func readable(t *testing.T, s *store, tenant, ref, content string) bool {
	t.Helper()
	_, f, err := s.open(tenant, ref)
	if errors.Is(err, ErrNotFound) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, len(content)+1)
	n, _ := f.Read(b)
	if string(b[:n]) != content {
		t.Fatalf("%s holds %q, want %q", ref, b[:n], content)
	}
	return true
}

func blobCount(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, "artifacts", "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestArtifactGC guards issue 10's finding 10: the artifact store never deleted
// anything. Artifacts now go ArtifactTTL after they were stored (the collector's
// clock is injected: no sleeping), and the oldest go first when the store passes
// ArtifactStoreBytes; a blob shared by two tenants stays while one still holds it.
func TestArtifactGC(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	cfg := storeConfig(dir, c)
	cfg.ArtifactStoreBytes = 30
	s, err := openStore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	old := mustPut(t, s, "x", "old-content")   // 11 bytes
	shared := mustPut(t, s, "x", "shared-one") // 10 bytes
	c.add(40 * time.Minute)
	mustPut(t, s, "y", "shared-one") // y's record of the same blob is newer
	c.add(time.Minute)
	young := mustPut(t, s, "x", "young") // 5 bytes
	if n, err := s.gc(); n != 0 || err != nil {
		t.Fatalf("nothing has expired yet, gc removed %d: %v", n, err)
	}
	c.add(30 * time.Minute) // old and x's shared are 71 minutes old, y's 31, young 30
	if n, err := s.gc(); n != 2 || err != nil {
		t.Fatalf("gc removed %d (%v), want x's two expired records", n, err)
	}
	if readable(t, s, "x", old.Ref, "old-content") || readable(t, s, "x", shared.Ref, "shared-one") {
		t.Fatal("an expired artifact is still readable")
	}
	if !readable(t, s, "y", shared.Ref, "shared-one") || !readable(t, s, "x", young.Ref, "young") {
		t.Fatal("gc removed an artifact that had not expired")
	}
	if got := blobCount(t, dir); got != 2 {
		t.Fatalf("%d blobs, want 2 (shared, young): the expired one's blob stays", got)
	}
	// Size: 15 bytes kept, two more of 10 pass the bound of 30; the oldest
	// (y's shared) goes at once, and that is enough.
	a := mustPut(t, s, "x", "ten-bytes1")
	c.add(time.Minute)
	b := mustPut(t, s, "x", "ten-bytes2")
	if readable(t, s, "y", shared.Ref, "shared-one") {
		t.Fatal("past the store's bound the oldest artifact was kept")
	}
	if !readable(t, s, "x", young.Ref, "young") || !readable(t, s, "x", a.Ref, "ten-bytes1") || !readable(t, s, "x", b.Ref, "ten-bytes2") {
		t.Fatal("an artifact was removed for size although the newer ones fit")
	}
	if s.total > cfg.ArtifactStoreBytes {
		t.Fatalf("the store holds %d bytes, bound %d", s.total, cfg.ArtifactStoreBytes)
	}
}

// TestArtifactQuota: a tenant past its artifact quota gets a *QuotaError (an
// ErrQuota) and loses nothing it stored; other tenants are not bound by it;
// storing the same bytes again replaces its record and costs nothing; once its
// old artifacts expire there is room again. The usage survives a restart.
func TestArtifactQuota(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	cfg := storeConfig(dir, c)
	cfg.ArtifactQuotas = map[string]ArtifactQuota{"x": {Bytes: 25, Count: 2}}
	s, err := openStore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	one := mustPut(t, s, "x", "0123456789")
	two := mustPut(t, s, "x", "abcdefghij")
	_, err = putString(t, s, "x", "third")
	var qe *QuotaError
	if !errors.As(err, &qe) || !errors.Is(err, ErrQuota) || !strings.Contains(qe.Msg, "2 artifacts") || qe.Action == "" {
		t.Fatalf("a third artifact over a count of 2: %v", err)
	}
	if !readable(t, s, "x", one.Ref, "0123456789") || !readable(t, s, "x", two.Ref, "abcdefghij") {
		t.Fatal("a refused put lost an artifact")
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "artifacts", "tmp")); len(ents) != 0 || blobCount(t, dir) != 2 {
		t.Fatalf("a refused put left files: tmp %v, %d blobs", ents, blobCount(t, dir))
	}
	if _, err := putString(t, s, "x", "0123456789"); err != nil {
		t.Fatalf("the same bytes again (a replacement) at the quota: %v", err)
	}
	mustPut(t, s, "y", "tenant y has no quota")
	// Restart: the index is rebuilt from the records, the quota still holds.
	s, err = openStore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := putString(t, s, "x", "third"); !errors.Is(err, ErrQuota) {
		t.Fatalf("after a restart the quota is forgotten: %v", err)
	}
	// Bytes: the first two expire, 20 + 20 bytes would pass 25.
	c.add(2 * time.Hour)
	mustPut(t, s, "x", "twenty-bytes-of-data")
	if _, err := putString(t, s, "x", "twenty-bytes-of-more"); !errors.As(err, &qe) || !strings.Contains(qe.Msg, "40 bytes") {
		t.Fatalf("40 bytes over a quota of 25: %v", err)
	}
	if readable(t, s, "x", one.Ref, "0123456789") {
		t.Fatal("expired artifact kept past a quota that needed its room")
	}
}

// TestArtifactStoreRecovers: a blob without a record (a crash between the two
// renames) and a record without its blob are removed when the store opens.
func TestArtifactStoreRecovers(t *testing.T) {
	dir := t.TempDir()
	cfg := storeConfig(dir, newClock())
	s, err := openStore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	kept := mustPut(t, s, "x", "kept")
	gone := mustPut(t, s, "x", "blob removed")
	os.Remove(s.blob(strings.TrimPrefix(gone.Ref, "sha256:")))
	orphan := s.blob(strings.Repeat("ab", 32))
	os.WriteFile(orphan, []byte("nobody's"), 0o600)
	s, err = openStore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(orphan); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an orphan blob survived: %v", err)
	}
	if !readable(t, s, "x", kept.Ref, "kept") || readable(t, s, "x", gone.Ref, "") {
		t.Fatal("records after recovery")
	}
	if s.total != 4 {
		t.Fatalf("the index counts %d bytes, want 4", s.total)
	}
}
