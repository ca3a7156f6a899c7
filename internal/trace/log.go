package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/internal/chain"
)

// Sink receives events in seq order. A durable store is a Sink.
type Sink interface {
	Append(Event) error
}

// LogOptions configure a Log.
type LogOptions struct {
	Session string
	// Clock stamps events; default time.Now.
	Clock func() time.Time
	Sinks []Sink
	// Redact lists strings (API keys) scrubbed from every event's data, replaced by
	// [redacted], before any sink sees it. Strings shorter than 8 bytes are ignored:
	// scrubbing them would mangle ordinary text.
	Redact []string
	// Journal, if set, is the durable store, appended to before the other sinks:
	// an event it did not take goes nowhere, and the log halts (Halted): nothing
	// after a lost intent may be recorded or acted on.
	Journal Sink
	// After continues a session whose last event is After (a resumed session):
	// the next event is After.Seq+1, chained from After.Hash.
	After chain.Anchor
}

// Log numbers a session's events and hands them to its sinks. It is safe for
// concurrent use; events are appended in seq order.
type Log struct {
	o LogOptions

	mu     sync.Mutex
	seq    int64
	chain  chain.Chain
	err    error
	halted error
}

// NewLog returns a Log for one session.
func NewLog(o LogOptions) *Log {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	var keep []string
	for _, s := range o.Redact {
		if len(s) >= 8 {
			keep = append(keep, s)
		}
	}
	o.Redact = keep
	return &Log{o: o, seq: o.After.Seq, chain: *chain.Resume(nil, o.After.Hash)}
}

// Session returns the session id.
func (l *Log) Session() string { return l.o.Session }

// Emit appends an event with the given payload. A sink's failure is kept (Err) and
// the event still goes to the other sinks: losing the record must not stop the
// session, but the caller must be able to tell.
func (l *Log) Emit(typ Type, step int, callID string, payload any) Event {
	data, err := json.Marshal(payload)
	if err != nil {
		data = []byte(fmt.Sprintf(`{"marshal_error":%q}`, err.Error()))
	}
	data = l.scrub(data)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.halted != nil {
		return Event{}
	}
	seq, next := l.seq+1, l.chain
	ev := Event{Seq: seq, ID: fmt.Sprintf("%s/%d", l.o.Session, seq), Session: l.o.Session,
		Time: l.o.Clock().UTC(), Type: typ, Step: step, CallID: l.scrubString(callID), Data: data,
		PrevHash: next.Last()}
	if canon, err := chain.Canonical(ev); err == nil {
		_, ev.Hash = next.Link(canon)
	} else if l.err == nil {
		l.err = fmt.Errorf("trace: chain event %d: %w", ev.Seq, err)
	}
	if l.o.Journal != nil {
		if err := l.o.Journal.Append(ev); err != nil {
			l.halted = fmt.Errorf("trace: journal event %d: %w", ev.Seq, err)
			return Event{}
		}
	}
	l.seq, l.chain = seq, next
	for _, s := range l.o.Sinks {
		if err := s.Append(ev); err != nil && l.err == nil {
			l.err = fmt.Errorf("trace: append event %d: %w", ev.Seq, err)
		}
	}
	return ev
}

// Anchor returns the seq and hash of the last event: kept apart from the log
// (printed, stored in a results file), it shows a log cut or rewritten after
// the fact (VerifyEvents).
func (l *Log) Anchor() chain.Anchor {
	l.mu.Lock()
	defer l.mu.Unlock()
	return chain.Anchor{Seq: l.seq, Hash: l.chain.Last()}
}

// VerifyEvents checks the hash chain of a JSONL event log, and that it ends at
// anchor if one is given; the error names the first bad event.
func VerifyEvents(jsonl []byte, anchor *chain.Anchor) error {
	return chain.Verify(chain.Split(jsonl), chain.Options{Anchor: anchor})
}

// Halted returns why the journal refused an event; nil while it takes them.
func (l *Log) Halted() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.halted
}

// Err returns the first sink failure.
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

func (l *Log) scrub(b []byte) []byte {
	for _, s := range l.o.Redact {
		b = bytes.ReplaceAll(b, []byte(s), []byte("[redacted]"))
	}
	return b
}

func (l *Log) scrubString(s string) string {
	for _, r := range l.o.Redact {
		s = strings.ReplaceAll(s, r, "[redacted]")
	}
	return s
}

// Memory is a Sink that keeps events in memory.
type Memory struct {
	mu     sync.Mutex
	events []Event
}

func (m *Memory) Append(e Event) error {
	m.mu.Lock()
	m.events = append(m.events, e)
	m.mu.Unlock()
	return nil
}

// Events returns the events so far.
func (m *Memory) Events() []Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Event(nil), m.events...)
}

// JSONL is a Sink writing one JSON event per line, each with a single Write.
type JSONL struct {
	mu sync.Mutex
	w  io.Writer
}

// NewJSONL returns a JSONL sink on w.
func NewJSONL(w io.Writer) *JSONL { return &JSONL{w: w} }

func (j *JSONL) Append(e Event) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	_, err = j.w.Write(append(b, '\n'))
	return err
}

// ReadEvents reads a JSONL event log.
func ReadEvents(r io.Reader) ([]Event, error) {
	var out []Event
	err := eachLine(r, func(n int, line []byte) error {
		var e Event
		if err := json.Unmarshal(line, &e); err != nil {
			return fmt.Errorf("event line %d: %w", n, err)
		}
		out = append(out, e)
		return nil
	})
	return out, err
}

// ReadSteps reads a JSONL step trace.
func ReadSteps(r io.Reader) ([]Step, error) {
	var out []Step
	err := eachLine(r, func(n int, line []byte) error {
		var s Step
		if err := json.Unmarshal(line, &s); err != nil {
			return fmt.Errorf("trace line %d: %w", n, err)
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

// Load reads a file holding either a step trace or an event log (told apart by
// the first line) and returns the steps, projecting events if need be.
func Load(path string) ([]Step, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	first, _, _ := bytes.Cut(bytes.TrimLeft(b, " \t\r\n"), []byte("\n"))
	var probe struct {
		Type Type  `json:"type"`
		Seq  int64 `json:"seq"`
	}
	if json.Unmarshal(first, &probe) == nil && probe.Type != "" && probe.Seq > 0 {
		evs, err := ReadEvents(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return Project(evs)
	}
	steps, err := ReadSteps(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return steps, nil
}

const maxLine = 64 << 20

func eachLine(r io.Reader, f func(n int, line []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := f(n, line); err != nil {
			return err
		}
	}
	return sc.Err()
}
