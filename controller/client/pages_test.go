package client

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vlmfleet/vlmfleet/controller/api"
)

// The client follows every page of a list, also behind a reverse proxy
// that serves the API under a prefix the controller's Link headers do not
// name, and gives runs oldest first whatever their ids.
func TestListsFollowEveryPage(t *testing.T) {
	l := newLab(t)
	var entries []api.ImportEntry
	var oldestFirst []string
	for i := range 7 {
		// Ids run against time: run-6 is the oldest.
		r := resultDoc(fmt.Sprintf("run-%d", 6-i))
		r.CreatedAt = r.CreatedAt.Add(time.Duration(i) * time.Minute)
		r.FinishedAt = r.CreatedAt.Add(time.Minute)
		entries = append(entries, api.ImportEntry{Origin: "test", Run: r})
		oldestFirst = append(oldestFirst, r.ID)
	}
	if _, err := l.cl.Import(l.Ctx, entries); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := l.cl.SubmitSweep(l.Ctx, smallSweep()); err != nil {
			t.Fatal(err)
		}
	}
	target, err := url.Parse(l.Ctl.HTTPURL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httptest.NewServer(http.StripPrefix("/vlm", httputil.NewSingleHostReverseProxy(target)))
	defer proxy.Close()
	viaProxy, err := New(proxy.URL+"/vlm", WithToken(l.Ctl.APIToken()))
	if err != nil {
		t.Fatal(err)
	}
	for name, cl := range map[string]*Client{"direct": l.cl, "behind a proxy": viaProxy} {
		cl.pageLimit = 2
		runs, err := cl.Runs(l.Ctx, RunFilter{})
		var ids []string
		for _, r := range runs {
			ids = append(ids, r.ID)
		}
		if err != nil || !slices.Equal(ids, oldestFirst) {
			t.Errorf("%s: runs %v, %v; want %v", name, ids, err, oldestFirst)
		}
		if sweeps, err := cl.Sweeps(l.Ctx); err != nil || len(sweeps) != 3 {
			t.Errorf("%s: %d sweeps, %v; want 3", name, len(sweeps), err)
		}
		if jobs, err := cl.Jobs(l.Ctx, JobFilter{}); err != nil || len(jobs) != 3 {
			t.Errorf("%s: %d jobs, %v; want 3", name, len(jobs), err)
		}
	}
}

// A controller whose pages never end does not keep the client reading.
func TestListStopsAtABrokenNextPage(t *testing.T) {
	for name, answer := range map[string]func(w http.ResponseWriter, r *http.Request){
		"an empty page with a next": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Link", `</api/sweeps?cursor=more>; rel="next"`)
			_, _ = w.Write([]byte(`[]`))
		},
		"a page naming itself": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Link", "<"+r.URL.RequestURI()+`>; rel="next"`)
			_, _ = w.Write([]byte(`[{"id":"sw-1"}]`))
		},
		"a next without a cursor": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Link", `</api/sweeps>; rel="next"`)
			_, _ = w.Write([]byte(`[{"id":"sw-1"}]`))
		},
	} {
		srv := httptest.NewServer(http.HandlerFunc(answer))
		cl, err := New(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cl.Sweeps(t.Context()); err == nil || !strings.Contains(err.Error(), "list sweeps") {
			t.Errorf("%s: %v, want an error", name, err)
		}
		srv.Close()
	}
}
