package env

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/internal/runner"
	"github.com/agentbox/agentbox/internal/sandbox"
)

// lostError is the Result.Error of a background command that was running when
// its environment's process died: its sandbox died with it.
const lostError = "lost: the environment's server stopped while the command ran, and its sandbox with it"

// Recover restores the environments a previous agentbox process on StateDir left
// (see Manager): for each environment directory whose record checks (readRecord),
// a fresh sandbox takes over the old one's upper layer, under the same id, owner,
// labels, limits and deadlines, and its background commands' events are kept,
// those that were running ended by an exit event with Result.Error lostError. A
// pool member's record (no owner) has its sandbox discarded. A directory whose
// record does not check, or whose sandbox part is refused, is logged and removed
// (what it names is not touched); one that checks but cannot be restored now
// (its workspace is gone, say) is logged and kept for the next Recover, as is
// one Config.Restorable refuses (its tenant's configuration no longer allows it).
//
// Then it removes what other dead sandboxes left (sandbox.ReapStale: cgroups,
// uid reservations and upper layers that no sandbox keeps). NewManager runs it;
// it is safe to run again (live environments are skipped).
func (m *Manager) Recover() error {
	ents, err := os.ReadDir(m.envsDir())
	if err != nil {
		return err
	}
	for _, ent := range ents {
		name := ent.Name()
		m.mu.Lock()
		_, live := m.envs[name]
		m.mu.Unlock()
		if live {
			continue
		}
		dir := filepath.Join(m.envsDir(), name)
		r, err := m.readRecord(name)
		if err != nil {
			m.cfg.Log.Warn("env: refusing an environment's state record; its directory is removed", "dir", dir, "err", err)
			os.RemoveAll(dir)
			continue
		}
		if r.Options.Owner.Tenant == "" {
			if err := sandbox.Discard(r.Sandbox); err != nil && !errors.Is(err, sandbox.ErrUnsupported) {
				m.cfg.Log.Warn("env: a pool member's sandbox cannot be discarded", "dir", dir, "err", err)
			}
			os.RemoveAll(dir)
			continue
		}
		if ok := m.cfg.Restorable; ok != nil {
			if err := ok(r.Options); err != nil {
				m.cfg.Log.Error("env: not restoring an environment its tenant's configuration no longer allows; its files are kept (allow it again, or remove the directory)",
					"env", name, "tenant", r.Options.Owner.Tenant, "dir", dir, "err", err)
				m.mu.Lock()
				m.refused[name] = r.Options.Owner.Tenant
				m.mu.Unlock()
				continue
			}
		}
		m.mu.Lock()
		delete(m.refused, name)
		m.mu.Unlock()
		err = m.restore(r)
		var le *sandbox.LeftoverError
		switch {
		case errors.As(err, &le):
			m.cfg.Log.Warn("env: refusing an environment's state record; its directory is removed", "dir", dir, "err", err)
			os.RemoveAll(dir)
		case err != nil:
			m.cfg.Log.Error("env: cannot restore an environment; kept for the next start (fix what the error names, or remove the directory)",
				"env", name, "dir", dir, "err", err)
		default:
			m.cfg.Log.Info("env: restored an environment", "env", name, "tenant", r.Options.Owner.Tenant)
		}
	}
	if err := sandbox.ReapStale(); err != nil && !errors.Is(err, sandbox.ErrUnsupported) {
		return err
	}
	return nil
}

// Refused counts, by tenant, the recorded environments Recover left on disk
// without restoring them because Config.Restorable refused them.
func (m *Manager) Refused() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]int{}
	for _, t := range m.refused {
		out[t]++
	}
	return out
}

// restore starts r's environment again on its sandbox's leftover and makes it
// live, with the background commands its directory holds the spools of.
func (m *Manager) restore(r *stateRecord) error {
	o := r.Options
	if r.Withheld {
		// Its secrets and scan values were never on disk: without them its
		// network fails closed, reaching nothing (SetNetwork opens it again).
		o.Network = &Network{Scan: o.Network.Scan}
		m.cfg.Log.Warn("env: a restored environment's network held secrets or scan values, which are not kept on disk: it reaches nothing until set again",
			"env", r.ID)
	}
	lower, err := m.lowerOf(o)
	if err != nil {
		return err
	}
	img, err := m.openTemplate(o.Template)
	if err != nil {
		return err
	}
	var ttl = o.TTL
	if !r.Expires.IsZero() {
		ttl = r.Expires.Sub(r.Created)
	}
	e, err := m.start(shapeOf(o, lower, m.limits(o.Limits), ttl), img, o.Mounts, nil, r)
	if err != nil {
		return err
	}
	if err := e.restoreProcs(); err != nil {
		e.teardown()
		return err
	}
	return m.adopt(e, o, r.Created, r.Expires)
}

// restoreProcs makes the spools in e's directory (p<N>.events) its finished
// background commands: a spool without an exit event gets one saying the command
// was lost. Events resume after any Seq as before: what a client saw is on disk.
func (e *environment) restoreProcs() error {
	ents, err := os.ReadDir(e.dir)
	if err != nil {
		return err
	}
	type found struct {
		n int
		p *process
	}
	var procs []found
	for _, ent := range ents {
		num, ok := strings.CutSuffix(strings.TrimPrefix(ent.Name(), "p"), ".events")
		n, err := strconv.Atoi(num)
		if !ok || !strings.HasPrefix(ent.Name(), "p") || err != nil || n <= 0 || "p"+strconv.Itoa(n)+".events" != ent.Name() {
			continue
		}
		sp, err := openSpool(filepath.Join(e.dir, ent.Name()))
		if err != nil {
			return err
		}
		p := &process{id: "p" + strconv.Itoa(n), spool: sp, seq: sp.last(), changed: make(chan struct{}), done: make(chan struct{})}
		var last *Event
		if k := len(sp.seqs); k > 0 {
			if evs, err := sp.read(sp.offs, k-1, k); err == nil && len(evs) == 1 {
				last = &evs[0]
			}
		}
		if last != nil && last.Kind == EventExit && last.Result != nil {
			p.result = last.Result
		} else {
			p.result = &runner.Result{ExitCode: -1, Error: lostError, Isolation: runner.IsolationNamespace}
			p.seq++
			if err := sp.append(Event{Seq: p.seq, Kind: EventExit, Result: p.result}); err != nil {
				sp.close()
				return fmt.Errorf("env: restore %s: %w", p.id, err)
			}
		}
		close(p.done)
		procs = append(procs, found{n, p})
	}
	sort.Slice(procs, func(i, j int) bool { return procs[i].n < procs[j].n }) // oldest first, as retire keeps them
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, f := range procs {
		e.procs[f.p.id] = f.p
		e.finished = append(e.finished, f.p.id)
		e.nextProc = max(e.nextProc, f.n)
	}
	for len(e.finished) > e.m.cfg.KeepFinished {
		e.procs[e.finished[0]].forget()
		delete(e.procs, e.finished[0])
		e.finished = e.finished[1:]
	}
	return nil
}
