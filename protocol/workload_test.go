package protocol

import (
	"strings"
	"testing"
)

func TestDefaultWorkloadPlanFollowsTheMethod(t *testing.T) {
	w := DefaultWorkload()
	if err := w.Validate(); err != nil {
		t.Fatalf("default workload invalid: %v", err)
	}
	plan := w.Plan()
	// 3 sizes x 5 levels with one image, plus 4 sizes x 3 image counts with
	// one camera, less the 3 one-camera one-image combinations in both.
	if want := 3*5 + 4*3 - 3; len(plan) != want {
		t.Fatalf("plan has %d combinations, want %d", len(plan), want)
	}
	seen := map[ComboKey]int{}
	for _, p := range plan {
		seen[p.ComboKey]++
		if p.Images > 1 && p.Cameras != 1 {
			t.Errorf("%s: several images are measured with one camera only", p.ComboKey)
		}
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s planned %d times", k, n)
		}
	}
	k := ComboKey{Size: "720p", Images: 1, Cameras: 1}
	for _, p := range plan {
		if p.ComboKey == k && p.Requests != 8 {
			t.Errorf("%s: %d requests, want the larger count 8", k, p.Requests)
		}
		if p.Size == "2K" && p.Cameras > 1 {
			t.Errorf("2K is measured with one camera only, got %s", p.ComboKey)
		}
	}
	if plan[0].ComboKey != (ComboKey{Size: "480p", Images: 1, Cameras: 1}) {
		t.Errorf("plan starts with %s", plan[0].ComboKey)
	}
}

func TestWorkloadValidateNamesTheField(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Workload)
		want   string
	}{
		{"size", func(w *Workload) { w.Sizes = []string{"4K"} }, "workload.sizes[0]: image size \"4K\": want one of 480p, 720p, 1080p, 2K"},
		{"camera", func(w *Workload) { w.Cameras = []int{1, 0} }, "workload.cameras[1]: 0"},
		{"dup", func(w *Workload) { w.Cameras = []int{2, 2} }, "listed twice"},
		{"tokens", func(w *Workload) { w.MaxTokens = 0 }, "workload.max_tokens"},
		{"images", func(w *Workload) { w.ImagesPerRequest = []int{1, 99} }, "workload.images_per_request[1]"},
		{"prompt", func(w *Workload) { w.Prompt = " " }, "workload.prompt"},
		{"requests", func(w *Workload) { w.RequestsPerLevel = 0 }, "workload.requests_per_level"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := DefaultWorkload()
			tc.mutate(&w)
			err := w.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestLookupImageSize(t *testing.T) {
	s, err := LookupImageSize("2k")
	if err != nil || s.Width != 2560 || s.Height != 1440 || s.Name != "2K" {
		t.Fatalf("2k = %+v, %v", s, err)
	}
	for _, s := range ImageSizes() {
		if s.Width*9 != s.Height*16 && s.Name != "480p" {
			t.Errorf("%s is not 16:9", s.Name)
		}
	}
}

func TestAgentIDsAreSubjectTokens(t *testing.T) {
	for _, bad := range []string{"", "a.b", "a b", "a*", "a>", strings.Repeat("x", 65), "-x"} {
		if ValidateAgentID(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := ValidateAgentID("agx-orin_01"); err != nil {
		t.Fatal(err)
	}
	if got := AgentSubject("agx", KindResult); got != "vlmfleet.agent.agx.result" {
		t.Fatalf("subject %s", got)
	}
	pub, _ := AgentPermissionSubjects("agx")
	for _, p := range pub {
		if strings.Contains(p, "jobs") || strings.Contains(p, ".agent.") {
			if !strings.Contains(p, "agx") {
				t.Errorf("permission %s is not confined to the agent", p)
			}
		}
		// Creating a consumer lets its creator name the subject it
		// delivers to; the controller makes the agents' consumers.
		if strings.Contains(p, ".CONSUMER.CREATE.") || strings.Contains(p, ".CONSUMER.DURABLE.CREATE.") || strings.HasSuffix(p, ">") && strings.HasPrefix(p, "$JS.API") {
			t.Errorf("permission %s lets the agent create or change a consumer", p)
		}
	}
}
