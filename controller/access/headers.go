package access

import "net/http"

// DefaultPolicy is the Content-Security-Policy of every answer that does
// not set its own (Guard.Handler sets it first): nothing may run or load, and no
// page of another site may frame it. A page that sets none runs no script.
const DefaultPolicy = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// SecurityHeaders are set on every answer before its handler runs; a page
// replaces the policy with its own (the pages', the explorer's).
func SecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", DefaultPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
}
