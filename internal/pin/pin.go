// Package pin pins the tools of external MCP servers, against tool poisoning and
// rug pulls. A tool mounted into a session is pinned, at the first grant, by the
// sha256 of its canonical definition — name, description, input and output
// schemas, annotations — keyed by (server, tool name). Check then refuses, until
// a person grants it again:
//
//   - a tool never pinned (New: first use needs a grant);
//   - a pinned tool whose definition changed (Changed, a rug pull), with a diff of
//     the old and new definitions;
//   - a name a second server also offers, or a built-in tool's name (Shadowed);
//   - a definition whose description, schema texts or annotations hold
//     instructions or invisible characters (Poisoned, with the detector's flags:
//     package injection).
//
// Only Pinned is usable. A Store keeps pins in memory and reads and writes them as
// JSON for the integration to persist (one file per operator, beside the
// configuration).
//
// It deliberately does not talk to servers (the MCP client lists their tools and
// hands them here) or decide what a usable tool may do: its calls go through the
// policy like any other, with its hints untrusted.
package pin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/internal/injection"
	udiff "github.com/aymanbagabas/go-udiff"
)

// Tool is an MCP server's tool as tools/list gives it.
type Tool struct {
	Server       string          `json:"server"`
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
}

// canonical is the definition that is hashed: every JSON value decoded and
// encoded again, so that key order and spacing do not count.
func canonical(t Tool) ([]byte, error) {
	def := map[string]any{"name": t.Name, "description": t.Description}
	for k, raw := range map[string]json.RawMessage{"inputSchema": t.InputSchema, "outputSchema": t.OutputSchema, "annotations": t.Annotations} {
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("tool %s/%s: %s is not JSON: %w", t.Server, t.Name, k, err)
		}
		def[k] = v
	}
	return json.MarshalIndent(def, "", "  ") // maps marshal with sorted keys
}

// Hash is the sha256 of the tool's canonical definition, "sha256:" and hex.
func Hash(t Tool) (string, error) {
	b, err := canonical(t)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// Pin is a tool definition a person granted.
type Pin struct {
	Server string    `json:"server"`
	Name   string    `json:"name"`
	Hash   string    `json:"hash"`
	Tool   Tool      `json:"tool"` // the granted definition, for diffs
	By     string    `json:"by"`
	At     time.Time `json:"at"`
}

// Status is what Check found.
type Status string

const (
	Pinned   Status = "pinned"   // matches its pin: usable
	New      Status = "new"      // never granted
	Changed  Status = "changed"  // differs from its pin: a rug pull until granted again
	Shadowed Status = "shadowed" // its name is another server's or a built-in tool's
	Poisoned Status = "poisoned" // its definition holds instructions or invisible characters
	Invalid  Status = "invalid"  // its schemas or annotations are not JSON
)

// Check is the verdict on one tool.
type Check struct {
	Status Status `json:"status"`
	Tool   Tool   `json:"tool"`
	Hash   string `json:"hash,omitempty"`
	Pin    *Pin   `json:"pin,omitempty"`
	// Diff is a unified diff of the pinned definition and this one (Changed).
	Diff string `json:"diff,omitempty"`
	// Other names who else holds the name (Shadowed): a server, or "built-in".
	Other string `json:"other,omitempty"`
	// Flags are what the injection detector found in the definition (Poisoned).
	Flags []injection.Flag `json:"flags,omitempty"`
	Why   string           `json:"why"`
}

// Usable reports whether the tool may be offered to the model.
func (c Check) Usable() bool { return c.Status == Pinned }

type key struct{ server, name string }

// Store holds the pins of an operator. It is safe for concurrent use.
type Store struct {
	mu       sync.Mutex
	pins     map[key]Pin
	reserved []string
	clock    func() time.Time
}

// NewStore returns an empty store; reserved are the names no server may take
// (the built-in tools').
func NewStore(reserved []string) *Store {
	return &Store{pins: map[key]Pin{}, reserved: slices.Clone(reserved), clock: time.Now}
}

// Check judges one tool against the store.
func (s *Store) Check(t Tool) Check {
	return s.CheckAll([]Tool{t})[0]
}

// CheckAll judges the tools of one listing (of one or several servers). Within a
// listing, a name offered by two servers is shadowed for every server but the one
// that holds its pin (for both, if neither does).
func (s *Store) CheckAll(tools []Tool) []Check {
	s.mu.Lock()
	defer s.mu.Unlock()
	offered := map[string][]string{}
	for _, t := range tools {
		if !slices.Contains(offered[t.Name], t.Server) {
			offered[t.Name] = append(offered[t.Name], t.Server)
		}
	}
	out := make([]Check, len(tools))
	for i, t := range tools {
		out[i] = s.check(t, offered[t.Name])
	}
	return out
}

func (s *Store) check(t Tool, servers []string) Check {
	c := Check{Tool: t}
	h, err := Hash(t)
	if err != nil {
		c.Status, c.Why = Invalid, err.Error()
		return c
	}
	c.Hash = h
	if slices.Contains(s.reserved, t.Name) {
		c.Status, c.Other = Shadowed, "built-in"
		c.Why = fmt.Sprintf("server %s offers a tool named %s, which is a built-in tool", t.Server, t.Name)
		return c
	}
	for k, p := range s.pins {
		if k.name == t.Name && k.server != t.Server {
			c.Status, c.Other, c.Pin = Shadowed, k.server, &p
			c.Why = fmt.Sprintf("server %s offers %s, which is pinned for server %s", t.Server, t.Name, k.server)
			return c
		}
	}
	p, pinned := s.pins[key{t.Server, t.Name}]
	for _, other := range servers {
		if other != t.Server && !pinned {
			c.Status, c.Other = Shadowed, other
			c.Why = fmt.Sprintf("servers %s and %s both offer %s", t.Server, other, t.Name)
			return c
		}
	}
	if pinned && p.Hash == h {
		c.Status, c.Pin = Pinned, &p
		c.Why = "matches the definition granted by " + p.By
		return c
	}
	if flags := poison(t); len(flags) > 0 {
		c.Status, c.Flags = Poisoned, flags
		c.Why = fmt.Sprintf("the definition of %s/%s holds %s (%q)", t.Server, t.Name, flags[0].Rule, flags[0].Excerpt)
		if pinned {
			c.Pin = &p
			c.Diff = diff(p.Tool, t)
		}
		return c
	}
	if pinned {
		c.Status, c.Pin, c.Diff = Changed, &p, diff(p.Tool, t)
		c.Why = fmt.Sprintf("the definition of %s/%s changed since %s granted it", t.Server, t.Name, p.By)
		return c
	}
	c.Status, c.Why = New, fmt.Sprintf("%s/%s has never been granted", t.Server, t.Name)
	return c
}

// poison runs the injection detector over every text of the definition: the
// description, the name, and every string in the schemas and annotations (a
// parameter's description is where poisoning hides).
func poison(t Tool) []injection.Flag {
	texts := []string{t.Name, t.Description}
	for _, raw := range []json.RawMessage{t.InputSchema, t.OutputSchema, t.Annotations} {
		var v any
		if json.Unmarshal(raw, &v) == nil {
			texts = append(texts, stringsOf(v)...)
		}
	}
	var out []injection.Flag
	for _, s := range texts {
		out = append(out, injection.Detect(s)...)
	}
	return out
}

func stringsOf(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, x := range v {
			out = append(out, stringsOf(x)...)
		}
		return out
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := keys
		for _, k := range keys {
			out = append(out, stringsOf(v[k])...)
		}
		return out
	}
	return nil
}

func diff(old, new Tool) string {
	a, _ := canonical(old)
	b, _ := canonical(new)
	return udiff.Unified(old.Server+"/"+old.Name+" (granted)", new.Server+"/"+new.Name+" (offered)", string(a)+"\n", string(b)+"\n")
}

// Grant pins a tool's current definition, after a person approved it (having seen
// the Check); it replaces the server's earlier pin of the name.
func (s *Store) Grant(t Tool, by string) (Pin, error) {
	h, err := Hash(t)
	if err != nil {
		return Pin{}, err
	}
	p := Pin{Server: t.Server, Name: t.Name, Hash: h, Tool: t, By: by, At: s.clock()}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.pins {
		if k.name == t.Name && k.server != t.Server {
			// A person chose this server's tool over the other's: one name, one pin.
			delete(s.pins, k)
		}
	}
	s.pins[key{t.Server, t.Name}] = p
	return p, nil
}

// Pins returns the pins, ordered by server and name.
func (s *Store) Pins() []Pin {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Pin, 0, len(s.pins))
	for _, p := range s.pins {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Pin) int { return strings.Compare(a.Server+"\x00"+a.Name, b.Server+"\x00"+b.Name) })
	return out
}

type file struct {
	Version int   `json:"version"`
	Pins    []Pin `json:"pins"`
}

// Save writes the pins as JSON.
func (s *Store) Save(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(file{Version: 1, Pins: s.Pins()})
}

// Load reads pins Save wrote, refusing a pin whose hash does not match its
// definition (an edited file).
func (s *Store) Load(r io.Reader) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var f file
	if err := dec.Decode(&f); err != nil {
		return fmt.Errorf("pins: %w", err)
	}
	if f.Version != 1 {
		return fmt.Errorf("pins: version %d is not one this agentbox reads (it reads 1)", f.Version)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, p := range f.Pins {
		h, err := Hash(p.Tool)
		if err != nil || h != p.Hash || p.Tool.Server != p.Server || p.Tool.Name != p.Name {
			return fmt.Errorf("pins[%d] %s/%s: the hash does not match the definition; grant the tool again", i, p.Server, p.Name)
		}
		s.pins[key{p.Server, p.Name}] = p
	}
	return nil
}
