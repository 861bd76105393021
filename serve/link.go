package serve

import (
	"context"
	"crypto/hmac"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nsman/nsman/internal/execute"
	"github.com/nsman/nsman/internal/status"
	"github.com/nsman/nsman/links"
	"github.com/nsman/nsman/policy/durtext"
)

// refusal is why a link is refused: its status code, its result (the
// metric's label and the log's) and the page that says so.
type refusal struct {
	code   int
	result string
	why    string
}

func (f *refusal) page() page {
	return page{Title: "This link cannot be used", Lines: []string{f.why, "Nothing was changed."}, Refused: true}
}

// check verifies token and reads the namespace it names: the link, the
// namespace, or why the link is refused.
func (s *Server) check(ctx context.Context, token string) (links.Link, *corev1.Namespace, *refusal) {
	l, err := links.Verify(s.cfg.key, token, s.cfg.Now())
	switch {
	case errors.Is(err, links.ErrExpired):
		return l, nil, &refusal{http.StatusGone, "expired", "The link has expired: ask for a new one, or use nsman hold or nsman wake."}
	case err != nil:
		return l, nil, &refusal{http.StatusForbidden, "invalid", "The link is not one nsman made, or it was altered."}
	case s.cfg.MaxHold > 0 && l.Duration > s.cfg.MaxHold:
		return l, nil, &refusal{http.StatusForbidden, "overCap", fmt.Sprintf("The link asks for %s, longer than this installation allows (%s).", human(l.Duration), human(s.cfg.MaxHold))}
	}
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	ns, err := s.cfg.Clients.Kube.CoreV1().Namespaces().Get(ctx, l.Namespace, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return l, nil, &refusal{http.StatusNotFound, "gone", "The namespace " + l.Namespace + " no longer exists."}
	case err != nil:
		s.cfg.Log.Error("namespace not read", "namespace", l.Namespace, "error", err)
		return l, nil, &refusal{http.StatusServiceUnavailable, "error", "The namespace could not be read: try again later."}
	case string(ns.UID) != l.UID:
		return l, nil, &refusal{http.StatusConflict, "recreated", "The namespace " + l.Namespace + " was deleted and created again since the link was made: the link was for the one before."}
	case ns.DeletionTimestamp != nil:
		return l, nil, &refusal{http.StatusConflict, "terminating", "The namespace " + l.Namespace + " is being deleted."}
	}
	return l, ns, nil
}

// get shows what the link does, and a button; it writes nothing.
func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get("t")
	l, ns, refused := s.check(r.Context(), token)
	if refused != nil {
		s.answer(r, l, refused.result)
		show(w, refused.code, refused.page())
		return
	}
	verb := map[links.Action]string{links.Extend: "Hold", links.Wake: "Wake"}[l.Action]
	p := page{Title: fmt.Sprintf("%s namespace %s for %s?", verb, l.Namespace, human(l.Duration)), Token: token, FormToken: s.formToken(token)}
	p.Lines = append(p.Lines, does(l, s.cfg.Now().Add(l.Duration)), "Now: "+state(ns, s.cfg.Now()))
	if u := s.user(r); u != "" {
		p.Lines = append(p.Lines, "Asked by "+u+".")
	}
	p.Lines = append(p.Lines, "The link may be used until "+stamp(l.Expires)+". Nothing changes until you press the button.")
	p.Button = verb + " for " + human(l.Duration)
	s.answer(r, l, "shown")
	show(w, http.StatusOK, p)
}

// post writes what the link says, once per link and minute.
func (s *Server) post(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	var l links.Link
	if err := r.ParseForm(); err != nil {
		s.refuse(w, r, l, &refusal{http.StatusBadRequest, "invalid", "The request could not be read."})
		return
	}
	token := r.PostForm.Get("t")
	if !s.sameOrigin(r) || !hmac.Equal([]byte(r.PostForm.Get("f")), []byte(s.formToken(token))) {
		s.refuse(w, r, l, &refusal{http.StatusForbidden, "crossOrigin", "The request did not come from nsman's own page: open the link and press its button."})
		return
	}
	l, ns, refused := s.check(r.Context(), token)
	if refused != nil {
		s.refuse(w, r, l, refused)
		return
	}
	sig := token[strings.LastIndex(token, ".")+1:]
	if !s.limit.allow(sig, s.cfg.Now()) {
		s.refuse(w, r, l, &refusal{http.StatusTooManyRequests, "limited", "This link was used less than a minute ago: " + state(ns, s.cfg.Now())})
		return
	}
	until := s.cfg.Now().Add(l.Duration).UTC().Truncate(time.Second)
	if later := laterThan(ns, l, until); later != "" {
		// A link extends or wakes; it never shortens what someone set.
		s.answer(r, l, "already")
		show(w, http.StatusOK, page{Title: "Nothing to do", Done: true, Lines: []string{later, "Nothing was changed."}})
		return
	}
	if err := s.write(r.Context(), l, until); err != nil {
		s.limit.forget(sig)
		// The patch names the link's UID: on a namespace recreated since
		// the read, the API server refuses it (metadata.uid is immutable).
		if apierrors.IsConflict(err) || apierrors.IsInvalid(err) {
			s.refuse(w, r, l, &refusal{http.StatusConflict, "recreated", "The namespace " + l.Namespace + " was deleted and created again since the link was made: the link was for the one before."})
			return
		}
		s.cfg.Log.Error("link not carried out", "namespace", l.Namespace, "action", string(l.Action), "error", err)
		s.refuse(w, r, l, &refusal{http.StatusBadGateway, "error", "The change could not be made: try again later."})
		return
	}
	s.answer(r, l, "done")
	show(w, http.StatusOK, page{Title: "Done", Done: true, Lines: []string{done(l, until)}})
}

func (s *Server) refuse(w http.ResponseWriter, r *http.Request, l links.Link, f *refusal) {
	s.answer(r, l, f.result)
	show(w, f.code, f.page())
}

// write is what nsman hold --for or nsman wake --for writes, on the
// namespace of the link's UID alone.
func (s *Server) write(ctx context.Context, l links.Link, until time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	var err error
	if l.Action == links.Wake {
		_, err = execute.WakeUntilIfUID(ctx, s.cfg.Clients, l.Namespace, l.UID, until)
	} else {
		_, err = execute.HoldIfUID(ctx, s.cfg.Clients, l.Namespace, l.UID, until)
	}
	return err
}

// does says what pressing the button does.
func does(l links.Link, until time.Time) string {
	if l.Action == links.Wake {
		return fmt.Sprintf("Pressing the button wakes namespace %s and keeps it awake until %s (%s from the press), as nsman wake %s --for %s does: nsman brings its workloads back at its next sweep, and puts it to sleep again no earlier than that.", l.Namespace, stamp(until), human(l.Duration), l.Namespace, durtext.Format(l.Duration))
	}
	return fmt.Sprintf("Pressing the button holds every nsman manager and rule from acting on namespace %s until %s (%s from the press), as nsman hold %s --for %s does: nothing is deleted, scaled down or put to sleep before then.", l.Namespace, stamp(until), human(l.Duration), l.Namespace, durtext.Format(l.Duration))
}

func done(l links.Link, until time.Time) string {
	if l.Action == links.Wake {
		return fmt.Sprintf("Namespace %s is woken until %s: nsman brings its workloads back at its next sweep.", l.Namespace, stamp(until))
	}
	return fmt.Sprintf("Namespace %s is held until %s: no nsman manager or rule acts on it before then.", l.Namespace, stamp(until))
}

// state says, plainly, what the namespace's hold and wake annotations mean
// at now.
func state(ns *corev1.Namespace, now time.Time) string {
	var says []string
	for _, a := range []struct{ key, verb string }{{status.HoldAnnotation, "held"}, {status.WakeAnnotation, "woken"}} {
		v, ok := ns.Annotations[a.key]
		if !ok {
			continue
		}
		t, err := time.Parse(time.RFC3339, v)
		switch {
		case err != nil:
			says = append(says, fmt.Sprintf("its %s annotation is not a time nsman reads", a.key))
		case t.After(now):
			says = append(says, fmt.Sprintf("it is %s until %s", a.verb, stamp(t)))
		default:
			says = append(says, fmt.Sprintf("it was %s until %s, which has passed", a.verb, stamp(t)))
		}
	}
	if len(says) == 0 {
		return "namespace " + ns.Name + " is neither held nor woken: nsman acts on it as its policies say."
	}
	return "namespace " + ns.Name + ": " + strings.Join(says, "; ") + "."
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

// human is d in a person's words: "1 day", "1 week", "2 hours"; one not a
// whole number of any unit as nsman's duration flags take it ("1h30m").
func human(d time.Duration) string {
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{7 * 24 * time.Hour, "week"}, {24 * time.Hour, "day"}, {time.Hour, "hour"}, {time.Minute, "minute"}} {
		if d >= u.d && d%u.d == 0 {
			if n := int(d / u.d); n != 1 {
				return strconv.Itoa(n) + " " + u.name + "s"
			}
			return "1 " + u.name
		}
	}
	return durtext.Format(d)
}

// laterThan says so when ns is already held (or woken, for a wake link)
// until later than until; "" when the link would extend it.
func laterThan(ns *corev1.Namespace, l links.Link, until time.Time) string {
	key, verb := status.HoldAnnotation, "held"
	if l.Action == links.Wake {
		key, verb = status.WakeAnnotation, "woken"
	}
	t, err := time.Parse(time.RFC3339, ns.Annotations[key])
	if err != nil || !t.After(until) {
		return ""
	}
	return fmt.Sprintf("Namespace %s is already %s until %s, later than this link would.", ns.Name, verb, stamp(t))
}
