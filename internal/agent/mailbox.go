package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentbox/agentbox/internal/grant"
	"github.com/agentbox/agentbox/internal/journal"
)

// ErrAwaiting is an approver's "a person has not answered yet, and the session
// should not wait": a durable session pauses (stop reason paused) with the
// request recorded, and resume continues the call once it is answered.
var ErrAwaiting = errors.New("the request awaits a person's answer")

// Mailbox answers the requests of a durable session from its journal's
// mailbox, where a person's answer is left (AnswerRequest: agentbox sessions
// approve|deny, or an API over it). With no answer there it waits up to Wait,
// polling, and then leaves the request unanswered (policy_stop); with Wait 0
// it does not wait, and the session pauses (ErrAwaiting).
type Mailbox struct {
	Store *journal.Store
	Wait  time.Duration
	// Poll is how often it looks while waiting (default 200ms).
	Poll time.Duration
	// Notify, if set, is told of each request the mailbox holds no answer to
	// yet: how a person learns there is something to answer. A resume that
	// finds the answer there tells nobody.
	Notify func(r grant.Request)
}

// Approve implements Approver.
func (m *Mailbox) Approve(ctx context.Context, r grant.Request) (grant.Answer, error) {
	notify := m.Notify
	poll := m.Poll
	if poll <= 0 {
		poll = 200 * time.Millisecond
	}
	deadline := time.Now().Add(m.Wait)
	for {
		b, ok, err := m.Store.Answer(r.ID)
		if err != nil {
			return grant.Answer{}, err
		}
		if ok {
			var a grant.Answer
			if err := json.Unmarshal(b, &a); err != nil || a.Request != r.ID {
				return grant.Answer{}, fmt.Errorf("the mailbox's answer to %s cannot be read (%v)", r.ID, err)
			}
			return a, nil
		}
		if notify != nil {
			notify(r)
			notify = nil
		}
		if m.Wait <= 0 {
			return grant.Answer{}, ErrAwaiting
		}
		left := time.Until(deadline)
		if left <= 0 {
			return grant.Answer{}, fmt.Errorf("%w within %s", ErrUnanswered, m.Wait)
		}
		t := time.NewTimer(min(poll, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return grant.Answer{}, context.Cause(ctx)
		case <-t.C:
		}
	}
}

// AnswerRequest leaves a person's answer to an approval request of the durable
// session in s, for its driver (waiting, or the one resume starts) to record
// and act on. The request must be awaiting; an answer is given once.
func AnswerRequest(s *journal.Store, request string, allow bool, scope, by string) (grant.Request, grant.Answer, error) {
	st, err := s.Load()
	if err != nil {
		return grant.Request{}, grant.Answer{}, err
	}
	if st.Seq == 0 {
		return grant.Request{}, grant.Answer{}, journal.ErrNoSession
	}
	i := slices.IndexFunc(st.Awaiting, func(a journal.Awaiting) bool { return a.Request.ID == request })
	if i < 0 {
		var ids []string
		for _, a := range st.Awaiting {
			ids = append(ids, a.Request.ID)
		}
		if len(ids) == 0 {
			return grant.Request{}, grant.Answer{}, fmt.Errorf("request %q is not awaiting an answer: the session awaits none", request)
		}
		return grant.Request{}, grant.Answer{}, fmt.Errorf("request %q is not awaiting an answer: the session awaits %v", request, ids)
	}
	r := st.Awaiting[i].Request
	a, err := grant.Reply(r, allow, scope, by)
	if err != nil {
		return r, grant.Answer{}, fmt.Errorf("request %s: %w", request, err)
	}
	b, err := json.Marshal(a)
	if err != nil {
		return r, a, err
	}
	return r, a, s.PutAnswer(request, b)
}
