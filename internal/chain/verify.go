package chain

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// Anchor is the seq and hash of a log's last record, kept out of the log's reach,
// so that a cut tail or a rewritten log shows.
type Anchor struct {
	Seq  int64  `json:"seq"`
	Hash string `json:"hash"`
}

// ParseAnchor reads an anchor hash as agent prints it (events_anchor): "sha256:"
// and 64 lowercase hex digits. Anything else is refused, so that a mistyped anchor
// is not reported as a rewritten log.
func ParseAnchor(s string) (*Anchor, error) {
	hexPart, ok := strings.CutPrefix(s, "sha256:")
	if _, err := hex.DecodeString(hexPart); !ok || err != nil || len(hexPart) != 64 || strings.ToLower(hexPart) != hexPart {
		return nil, fmt.Errorf("bad anchor %q: want sha256:<64 hex digits>, the events_anchor agent printed", s)
	}
	return &Anchor{Hash: s}, nil
}

// Kind is what Verify found wrong.
type Kind string

const (
	Malformed Kind = "malformed" // not a JSON object, or without prev_hash and hash
	Edited    Kind = "edited"    // the record does not match its own hash
	Removed   Kind = "removed"   // a record before this one is missing
	Reordered Kind = "reordered" // the record is out of order or repeated
	Broken    Kind = "broken"    // the record does not chain from the one before (that one was replaced)
	Truncated Kind = "truncated" // the log ends before its anchor
	Rewritten Kind = "rewritten" // the log's last hash is not the anchor's
)

// Error names the first bad record.
type Error struct {
	Index int   // 0-based position in the records given
	Seq   int64 // the record's seq, if it has one
	Kind  Kind
	Msg   string
}

func (e *Error) Error() string {
	if e.Seq > 0 {
		return fmt.Sprintf("event log: record %d (seq %d): %s: %s", e.Index+1, e.Seq, e.Kind, e.Msg)
	}
	return fmt.Sprintf("event log: record %d: %s: %s", e.Index+1, e.Kind, e.Msg)
}

// Options configure Verify.
type Options struct {
	Key []byte
	// Genesis is the prev_hash of the first record; "" for a log that starts a
	// chain. A log that continues another gives that log's last hash.
	Genesis string
	// Anchor, if set, is where the log must end.
	Anchor *Anchor
}

type head struct {
	Seq  *int64  `json:"seq"`
	Prev *string `json:"prev_hash"`
	Hash *string `json:"hash"`
}

// Verify checks a sequence of records, each a JSON object with prev_hash and hash
// (and, if it has one, a seq that counts from 1 by one), and returns nil or the
// *Error of the first bad record.
func Verify(records []json.RawMessage, o Options) error {
	prevHash := o.Genesis
	var prevSeq int64
	seqs := map[int64]bool{} // every seq the records carry, to tell a move from a removal
	for _, r := range records {
		var h head
		if json.Unmarshal(r, &h) == nil && h.Seq != nil {
			seqs[*h.Seq] = true
		}
	}
	for i, r := range records {
		var h head
		if err := json.Unmarshal(r, &h); err != nil || h.Prev == nil || h.Hash == nil {
			return &Error{Index: i, Kind: Malformed, Msg: "not a JSON object with prev_hash and hash"}
		}
		var seq int64
		if h.Seq != nil {
			seq = *h.Seq
			switch want := prevSeq + 1; {
			case i == 0 && o.Genesis == "" && seq != 1:
				return &Error{Index: i, Seq: seq, Kind: Removed, Msg: fmt.Sprintf("the log begins at seq %d; records 1 to %d are missing", seq, seq-1)}
			case i > 0 && seq > want && seqs[want]:
				return &Error{Index: i, Seq: seq, Kind: Reordered, Msg: fmt.Sprintf("seq %d follows seq %d; seq %d comes later", seq, prevSeq, want)}
			case i > 0 && seq > want:
				return &Error{Index: i, Seq: seq, Kind: Removed, Msg: fmt.Sprintf("seq %d follows seq %d; %d record(s) are missing", seq, prevSeq, seq-want)}
			case i > 0 && seq < want:
				return &Error{Index: i, Seq: seq, Kind: Reordered, Msg: fmt.Sprintf("seq %d follows seq %d", seq, prevSeq)}
			}
		}
		canon, err := Canonical(r)
		if err != nil {
			return &Error{Index: i, Seq: seq, Kind: Malformed, Msg: err.Error()}
		}
		if Sum(o.Key, *h.Prev, canon) != *h.Hash {
			return &Error{Index: i, Seq: seq, Kind: Edited, Msg: "its content does not match its hash: it was changed after it was written"}
		}
		if *h.Prev != prevHash {
			kind, msg := Broken, "its prev_hash is not the hash of the record before it: that record was replaced, or one between them removed"
			if i == 0 {
				msg = "its prev_hash is not the log's genesis: the records before it are missing"
				kind = Removed
			}
			return &Error{Index: i, Seq: seq, Kind: kind, Msg: msg}
		}
		prevHash, prevSeq = *h.Hash, seq
	}
	if a := o.Anchor; a != nil {
		n := len(records)
		switch {
		case a.Seq > 0 && prevSeq > 0 && prevSeq < a.Seq:
			return &Error{Index: n - 1, Seq: prevSeq, Kind: Truncated, Msg: fmt.Sprintf("the log ends at seq %d; its anchor is seq %d", prevSeq, a.Seq)}
		case prevHash != a.Hash:
			return &Error{Index: max(n-1, 0), Seq: prevSeq, Kind: Rewritten, Msg: "the last hash is not the anchor's: the log was cut or rewritten"}
		}
	}
	return nil
}

// Split parses JSON Lines into records, skipping blank lines.
func Split(jsonl []byte) []json.RawMessage {
	var out []json.RawMessage
	for _, line := range bytes.Split(jsonl, []byte("\n")) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			out = append(out, json.RawMessage(line))
		}
	}
	return out
}

// Last returns the anchor of a verified log.
func Last(records []json.RawMessage) Anchor {
	if len(records) == 0 {
		return Anchor{}
	}
	var h head
	_ = json.Unmarshal(records[len(records)-1], &h)
	a := Anchor{}
	if h.Seq != nil {
		a.Seq = *h.Seq
	}
	if h.Hash != nil {
		a.Hash = *h.Hash
	}
	return a
}
