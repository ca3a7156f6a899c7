package tool

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
)

// Store keeps the full outputs that were clipped before reaching the model
// (command output, which has no file to export), addressed by sha256, in the
// coordinator's memory, up to a total size. It is safe for concurrent use.
type Store struct {
	max int64

	mu    sync.Mutex
	total int64
	blobs map[string]storedBlob
}

type storedBlob struct {
	data []byte
	ref  Ref
}

// DefaultStoreBytes bounds a Store whose size is not set.
const DefaultStoreBytes = 64 << 20

// NewStore returns a Store holding at most max bytes (0: DefaultStoreBytes).
func NewStore(max int64) *Store {
	if max <= 0 {
		max = DefaultStoreBytes
	}
	return &Store{max: max, blobs: map[string]storedBlob{}}
}

// Put stores data and returns its reference; ok is false when the store is full
// (the output is then lost beyond what the model saw, and the envelope says so by
// carrying no ref).
func (s *Store) Put(data []byte, name, source string) (ref Ref, ok bool) {
	sum := sha256.Sum256(data)
	id := "sha256:" + hex.EncodeToString(sum[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.blobs[id]; ok {
		return b.ref, true
	}
	if s.total+int64(len(data)) > s.max {
		return Ref{}, false
	}
	ref = Ref{Ref: id, Size: int64(len(data)), Name: name, Source: source, Store: "coordinator"}
	s.blobs[id] = storedBlob{data: append([]byte(nil), data...), ref: ref}
	s.total += int64(len(data))
	return ref, true
}

// Read returns up to length bytes of a stored blob from offset.
func (s *Store) Read(ref string, offset, length int64) ([]byte, Ref, bool) {
	s.mu.Lock()
	b, ok := s.blobs[ref]
	s.mu.Unlock()
	if !ok {
		return nil, Ref{}, false
	}
	if offset > int64(len(b.data)) {
		offset = int64(len(b.data))
	}
	end := int64(len(b.data))
	if length > 0 && offset+length < end {
		end = offset + length
	}
	return b.data[offset:end], b.ref, true
}

func (r Ref) String() string { return fmt.Sprintf("%s (%d bytes)", r.Ref, r.Size) }
