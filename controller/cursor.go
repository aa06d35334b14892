package controller

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/vlmfleet/vlmfleet/controller/api"
	"github.com/vlmfleet/vlmfleet/controller/store"
)

// maxCursorKey bounds the key a cursor carries: ids are at most 256 bytes
// (protocol's limits), a rejection's key is 8.
const maxCursorKey = 1024

// cursorVersion is the first byte of every cursor, so that a later layout
// can tell its own cursors from these.
const cursorVersion = 1

// listKind names the list a cursor belongs to: a cursor of one list given
// to another is refused rather than read as a position in the wrong
// bucket.
type listKind byte

const (
	kindRuns     listKind = 'r'
	kindJobs     listKind = 'j'
	kindSweeps   listKind = 's'
	kindRejected listKind = 'x'
)

// cursor is a position in a list: the store key of the last record of the
// previous page and the direction of the walk. It is sent as base64url of
// version, kind, direction and key, opaque to clients.
type cursor struct {
	kind   listKind
	newest bool
	key    string
}

func encodeCursor(c cursor) string {
	b := make([]byte, 0, 3+len(c.key))
	dir := byte('o')
	if c.newest {
		dir = 'n'
	}
	b = append(b, cursorVersion, byte(c.kind), dir)
	b = append(b, c.key...)
	return base64.RawURLEncoding.EncodeToString(b)
}

var errBadCursor = errors.New("not a cursor of this list: pass the cursor of the Link rel=\"next\" header unchanged")

// decodeCursor reads a cursor sent by a client; any error means the
// client did not send back a cursor of this list as it got it.
func decodeCursor(s string, kind listKind) (cursor, error) {
	if len(s) > base64.RawURLEncoding.EncodedLen(3+maxCursorKey) {
		return cursor{}, errBadCursor
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < 4 || b[0] != cursorVersion || listKind(b[1]) != kind || (b[2] != 'o' && b[2] != 'n') {
		return cursor{}, errBadCursor
	}
	return cursor{kind: kind, newest: b[2] == 'n', key: string(b[3:])}, nil
}

// pageRequest is what a list request asks for: its page and, for the
// Link header, its query.
type pageRequest struct {
	kind  listKind
	page  store.Page
	query url.Values
	path  string
}

// parsePage reads the limit, order and cursor parameters of a list
// request; newestFirst is the list's order when the request names none.
// Its errors are 400s that name the parameter and what it takes.
func parsePage(r *http.Request, kind listKind, newestFirst bool) (pageRequest, error) {
	q := r.URL.Query()
	pr := pageRequest{kind: kind, query: q, path: r.URL.Path, page: store.Page{Limit: api.DefaultListLimit, Newest: newestFirst}}
	bad := func(format string, args ...any) (pageRequest, error) {
		return pageRequest{}, &requestError{http.StatusBadRequest, fmt.Errorf(format, args...)}
	}
	if v, ok := q["limit"]; ok {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 1 || n > api.MaxListLimit || len(v) > 1 {
			return bad("limit %q: want a whole number from 1 to %d (default %d); follow the Link rel=\"next\" header for more", v[0], api.MaxListLimit, api.DefaultListLimit)
		}
		pr.page.Limit = n
	}
	if v, ok := q["order"]; ok {
		switch {
		case len(v) == 1 && v[0] == "oldest":
			pr.page.Newest = false
		case len(v) == 1 && v[0] == "newest":
			pr.page.Newest = true
		default:
			return bad("order %q: want oldest or newest", v[0])
		}
	}
	if v, ok := q["cursor"]; ok {
		c, err := decodeCursor(v[0], kind)
		if err != nil || len(v) > 1 {
			return bad("cursor: %v", errBadCursor)
		}
		if _, named := q["order"]; named && c.newest != pr.page.Newest {
			return bad("cursor: it continues a list in the other order; drop order or the cursor")
		}
		pr.page.Newest, pr.page.After = c.newest, c.key
	}
	return pr, nil
}

// setNext sets the Link rel="next" header to the next page: the same path
// and query with the cursor after next (a store key), when there is one.
func (pr pageRequest) setNext(w http.ResponseWriter, next string) {
	if next == "" {
		return
	}
	q := url.Values{}
	for k, v := range pr.query {
		q[k] = v
	}
	q.Set("cursor", encodeCursor(cursor{kind: pr.kind, newest: pr.page.Newest, key: next}))
	u := url.URL{Path: pr.path, RawQuery: q.Encode()}
	w.Header().Set("Link", "<"+u.String()+`>; rel="next"`)
}
