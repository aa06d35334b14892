package controller

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vlmfleet/vlmfleet/internal/testutil/browsertest"
)

// A refused sweep file shows each of its problems once, after its line and
// column ("line 2, column 3: unknown field ..."), never the position twice,
// and each message under its line of the YAML.
func TestSweepsPageShowsEveryProblemOfAFile(t *testing.T) {
	path := chromium(t)
	c := startController(t, t.TempDir())
	announced(t, c, "orin-1", "d1")
	ctx := browsertest.Open(t, path, 60*time.Second)
	yaml := "agents: [orin-1]\nworkload:\n  camras: [1, 2]\n  search: true\n"
	js, _ := json.Marshal(yaml)
	tok, _ := json.Marshal(c.APIToken())
	fill := `document.getElementById("yaml").value = ` + string(js) + `;` +
		`document.getElementById("token").value = ` + string(tok) + `;` +
		`document.getElementById("submit").click(); true`
	if err := chromedp.Do(ctx, chromedp.Navigate(c.HTTPURL()+"/sweeps")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fill)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelectorAll("#source .at").length === 2`,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("waiting for two messages under the YAML: %v", err)
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#errors > .msg > div")].map(d => d.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`line 3, column 3: unknown field "camras" in workload; did you mean "cameras"?`,
		"line 4, column 11: workload.search: true, want a whole number; a search ceiling is a number of cameras: write `search: 64`, not `search: true` (0 or left out: the ladder only)",
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("messages %q,\nwant %q", got, want)
	}
	under, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#source .at")].map(d => d.dataset.errorLine)`))
	if err != nil {
		t.Fatal(err)
	}
	if len(under) != 2 || under[0] != "3" || under[1] != "4" {
		t.Errorf("messages under lines %q, want 3 and 4", under)
	}
}
