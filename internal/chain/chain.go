// Package chain makes a session's event log tamper-evident: each record carries
// the hash of the one before it (prev_hash) and its own (hash), where
//
//	hash = sha256(prev_hash || canonical JSON of the record without its hash field)
//
// (HMAC-SHA256 with a key, when one is given). The canonical JSON is the record
// decoded and encoded again: keys sorted, no spaces, numbers as written, no HTML
// escaping. Verify walks a sequence of records and names the first bad one: an
// edited record, one removed, records reordered or duplicated, a log whose tail
// was cut (against an Anchor: the seq and hash of the last record, kept elsewhere),
// a record without its hashes.
//
// What it can and cannot prove: without a key, anyone who can rewrite the whole
// log can recompute every hash; only an Anchor kept out of their reach (the
// session's end record given to the person, a results file, the daemon's memory)
// or a key they do not hold shows the rewrite. It is independent of storage — a
// function over records — so the trace log and a durable event store can both use
// it.
package chain

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// The fields a chained record carries.
const (
	PrevField = "prev_hash"
	HashField = "hash"
)

// Canonical returns the canonical JSON of a record (any value that marshals to a
// JSON object) without its hash field.
func Canonical(record any) ([]byte, error) {
	m, err := decode(record)
	if err != nil {
		return nil, err
	}
	delete(m, HashField)
	return encode(m)
}

func decode(record any) (map[string]any, error) {
	b, ok := record.(json.RawMessage)
	if !ok {
		var err error
		if b, err = json.Marshal(record); err != nil {
			return nil, err
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON object")
	}
	return m, nil
}

// encode writes a decoded record canonically: maps with sorted keys, no spaces,
// no HTML escaping, numbers as they were written.
func encode(m map[string]any) ([]byte, error) {
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}

// Sum is one link: the hash of a record, given the previous hash and the
// record's canonical JSON.
func Sum(key []byte, prev string, canonical []byte) string {
	var sum []byte
	if key != nil {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(prev))
		m.Write(canonical)
		sum = m.Sum(nil)
	} else {
		h := sha256.New()
		h.Write([]byte(prev))
		h.Write(canonical)
		sum = h.Sum(nil)
	}
	return "sha256:" + hex.EncodeToString(sum)
}

// Chain hashes records in order. The zero value chains from the empty genesis
// hash without a key. It is not safe for concurrent use: the log that owns it
// serialises appends.
type Chain struct {
	Key  []byte
	last string
}

// Resume returns a chain that continues after a record whose hash is last.
func Resume(key []byte, last string) *Chain { return &Chain{Key: key, last: last} }

// Last returns the hash of the last record chained ("" before the first).
func (c *Chain) Last() string { return c.last }

// Link returns the prev_hash and hash of the next record, whose canonical JSON
// (with prev_hash set to the returned prev, without hash) is canonical, and
// advances the chain.
func (c *Chain) Link(canonical []byte) (prev, hash string) {
	prev = c.last
	c.last = Sum(c.Key, prev, canonical)
	return prev, c.last
}

// Seal sets a record's prev_hash and hash: the record is a JSON object; the
// result is the same object with both fields, in canonical form.
func (c *Chain) Seal(record json.RawMessage) (json.RawMessage, error) {
	m, err := decode(record)
	if err != nil {
		return nil, fmt.Errorf("chain: %w", err)
	}
	m[PrevField] = c.last
	delete(m, HashField)
	canon, err := encode(m)
	if err != nil {
		return nil, err
	}
	_, m[HashField] = c.Link(canon)
	return encode(m)
}
