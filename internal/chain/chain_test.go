package chain

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// sealed returns n chained records shaped like trace events.
func sealed(t interface{ Fatal(...any) }, key []byte, n int) []json.RawMessage {
	var c Chain
	c.Key = key
	var out []json.RawMessage
	for i := 1; i <= n; i++ {
		ev := fmt.Sprintf(`{"seq":%d,"id":"s/%d","type":"ToolExecutionFinished","data":{"decision":"deny","rule":"read-sensitive","score":25.5,"path":"<.env>"}}`, i, i)
		r, err := c.Seal(json.RawMessage(ev))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func edit(r json.RawMessage, from, to string) json.RawMessage {
	return json.RawMessage(strings.Replace(string(r), from, to, 1))
}

func kindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}

func TestVerify(t *testing.T) {
	good := sealed(t, nil, 6)
	anchor := Last(good)
	if err := Verify(good, Options{Anchor: &anchor}); err != nil {
		t.Fatalf("an untouched log: %v", err)
	}
	if anchor.Seq != 6 || !strings.HasPrefix(anchor.Hash, "sha256:") {
		t.Fatalf("anchor %+v", anchor)
	}
	rehash := func(rs []json.RawMessage, from int) []json.RawMessage {
		// What an attacker without a key does after a change: recompute every
		// hash from the change on.
		c := Resume(nil, "")
		if from > 0 {
			var h head
			json.Unmarshal(rs[from-1], &h)
			c = Resume(nil, *h.Hash)
		}
		out := slices.Clone(rs)
		for i := from; i < len(out); i++ {
			out[i], _ = c.Seal(out[i])
		}
		return out
	}
	for _, c := range []struct {
		name  string
		log   func() []json.RawMessage
		index int
		kind  Kind
	}{
		{"a decision edited", func() []json.RawMessage {
			l := slices.Clone(good)
			l[2] = edit(l[2], `"deny"`, `"allow"`)
			return l
		}, 2, Edited},
		{"a decision edited and rehashed", func() []json.RawMessage {
			l := slices.Clone(good)
			l[2] = edit(l[2], `"deny"`, `"allow"`)
			l[2], _ = Resume(nil, mustHash(l[1])).Seal(l[2])
			return l
		}, 3, Broken},
		{"a record removed", func() []json.RawMessage { return slices.Delete(slices.Clone(good), 3, 4) }, 3, Removed},
		{"the first record removed", func() []json.RawMessage { return slices.Clone(good[1:]) }, 0, Removed},
		{"two records swapped", func() []json.RawMessage {
			l := slices.Clone(good)
			l[2], l[3] = l[3], l[2]
			return l
		}, 2, Reordered},
		{"a record repeated", func() []json.RawMessage { return slices.Insert(slices.Clone(good), 3, good[2]) }, 3, Reordered},
		{"a forged record inserted", func() []json.RawMessage {
			forged, _ := Resume(nil, mustHash(good[1])).Seal(json.RawMessage(`{"seq":3,"type":"ApprovalResolved","data":{"decision":"allow"}}`))
			return slices.Insert(slices.Clone(good), 2, forged)
		}, 3, Reordered},
		{"the tail cut", func() []json.RawMessage { return slices.Clone(good[:4]) }, 3, Truncated},
		{"rewritten from a record on", func() []json.RawMessage {
			l := slices.Clone(good)
			l[4] = edit(l[4], `"deny"`, `"allow"`)
			return rehash(l, 4)
		}, 5, Rewritten},
		{"a record without its hash", func() []json.RawMessage {
			l := slices.Clone(good)
			var m map[string]any
			json.Unmarshal(l[1], &m)
			delete(m, "hash")
			l[1], _ = json.Marshal(m)
			return l
		}, 1, Malformed},
		{"not JSON", func() []json.RawMessage {
			l := slices.Clone(good)
			l[5] = json.RawMessage(`{"seq":6,`)
			return l
		}, 5, Malformed},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Verify(c.log(), Options{Anchor: &anchor})
			var e *Error
			if !errors.As(err, &e) || e.Kind != c.kind || e.Index != c.index {
				t.Fatalf("got %v, want %s at record %d", err, c.kind, c.index+1)
			}
		})
	}
}

func mustHash(r json.RawMessage) string {
	var h head
	json.Unmarshal(r, &h)
	return *h.Hash
}

// TestKeyed: with a key, a rewrite is caught without an anchor.
func TestKeyed(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	l := sealed(t, key, 4)
	if err := Verify(l, Options{Key: key}); err != nil {
		t.Fatal(err)
	}
	l[1] = edit(l[1], `"deny"`, `"allow"`)
	var c Chain // the attacker has no key
	for i := range l {
		l[i], _ = c.Seal(l[i])
	}
	if err := Verify(l, Options{Key: key}); kindOf(err) != Edited {
		t.Fatalf("a rewrite without the key: %v", err)
	}
}

// TestCanonical: key order, spacing and escaping do not change the hash; the
// hash field does not count; numbers keep their spelling.
func TestCanonical(t *testing.T) {
	a, _ := Canonical(json.RawMessage(`{"b":1.50,"a":"<x>","hash":"sha256:zz"}`))
	b, _ := Canonical(json.RawMessage(` { "a" : "\u003cx\u003e", "b" : 1.50 } `))
	if string(a) != string(b) || string(a) != `{"a":"<x>","b":1.50}` {
		t.Fatalf("%s vs %s", a, b)
	}
	if _, err := Canonical(json.RawMessage(`{"a":1} {"b":2}`)); err == nil {
		t.Fatal("two objects were one record")
	}
}

// TestAnyTamperingIsCaught: one random change to a sealed log — an edit, a
// removal, a swap, a duplicate, a cut tail — is always reported, and never later
// than the record after the change.
func TestAnyTamperingIsCaught(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 20).Draw(t, "n")
		good := sealed(t, nil, n)
		anchor := Last(good)
		l := slices.Clone(good)
		i := rapid.IntRange(0, n-1).Draw(t, "i")
		switch rapid.IntRange(0, 4).Draw(t, "how") {
		case 0:
			l[i] = edit(l[i], `"deny"`, `"allow"`)
		case 1:
			l = slices.Delete(l, i, i+1)
		case 2:
			j := rapid.IntRange(0, n-1).Draw(t, "j")
			if i == j {
				return
			}
			l[i], l[j] = l[j], l[i]
		case 3:
			l = slices.Insert(l, i, l[i])
		case 4:
			l = l[:i]
		}
		err := Verify(l, Options{Anchor: &anchor})
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("not caught: %v", err)
		}
		if e.Index > i+1 && e.Kind != Truncated && e.Kind != Rewritten {
			t.Fatalf("caught at %d, changed at %d: %v", e.Index, i, err)
		}
	})
}

func TestSplit(t *testing.T) {
	good := sealed(t, nil, 3)
	var b strings.Builder
	for _, r := range good {
		b.Write(r)
		b.WriteString("\n\n")
	}
	if got := Split([]byte(b.String())); len(got) != 3 || Verify(got, Options{}) != nil {
		t.Fatalf("split %d records", len(got))
	}
}

func TestParseAnchor(t *testing.T) {
	good := sealed(t, nil, 2)
	a := Last(good)
	if p, err := ParseAnchor(a.Hash); err != nil || p.Hash != a.Hash {
		t.Fatalf("ParseAnchor(%q) = %v, %v", a.Hash, p, err)
	}
	for _, s := range []string{"sha256:00", "00", "", a.Hash[len("sha256:"):], "md5:" + a.Hash[len("sha256:"):],
		a.Hash + "0", strings.ToUpper(a.Hash[:7]) + a.Hash[7:], a.Hash[:len(a.Hash)-1] + "g", "sha256:" + strings.ToUpper(a.Hash[7:])} {
		if _, err := ParseAnchor(s); err == nil || !strings.Contains(err.Error(), "want sha256:<64 hex digits>") {
			t.Errorf("ParseAnchor(%q) = %v, want a bad-anchor error", s, err)
		}
	}
}
