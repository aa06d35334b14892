package nvsmi

import (
	"strings"
	"testing"
)

func TestSplitRow(t *testing.T) {
	row, err := SplitRow("0, NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition, [N/A], 97887\n", 4)
	if err != nil || len(row) != 4 || row[1] != "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition" || !Unavailable(row[2]) || row[3] != "97887" {
		t.Fatalf("got %q, %v", row, err)
	}
	if _, err := SplitRow("1, 2", 3); err == nil || !strings.Contains(err.Error(), "3 fields") {
		t.Errorf("want a count error, got %v", err)
	}
}

func TestUnavailable(t *testing.T) {
	for _, v := range []string{"[N/A]", "[Not Supported]", "[Unknown Error]", "N/A", " "} {
		if !Unavailable(v) {
			t.Errorf("%q should be unavailable", v)
		}
	}
	if Unavailable("0") {
		t.Error("0 is a value")
	}
}

func TestParseBanner(t *testing.T) {
	d, c := ParseBanner("| NVIDIA-SMI 580.65.06              Driver Version: 580.65.06      CUDA Version: 13.0     |")
	if d != "580.65.06" || c != "13.0" {
		t.Errorf("got %q %q", d, c)
	}
	if d, c := ParseBanner("no banner"); d != "" || c != "" {
		t.Errorf("got %q %q", d, c)
	}
}

func TestUnknownFieldMessage(t *testing.T) {
	m := unknownFieldRe().FindStringSubmatch("Field \"clocks_event_reasons.active\" is not a valid field to query.\n")
	if m == nil || m[1] != "clocks_event_reasons.active" {
		t.Errorf("got %q", m)
	}
}

func FuzzSplitRow(f *testing.F) {
	f.Add("2026/11/29 15:20:01.123, 0, 87, 85012", 4)
	f.Add("", 1)
	f.Fuzz(func(t *testing.T, line string, n int) {
		row, err := SplitRow(line, n)
		if err == nil && len(row) != n {
			t.Errorf("%d values for %d fields", len(row), n)
		}
	})
}

func FuzzParseBanner(f *testing.F) {
	f.Add("Driver Version: 580.65.06      CUDA Version: 13.0")
	f.Fuzz(func(t *testing.T, s string) {
		d, c := ParseBanner(s)
		if !strings.Contains(s, d) || !strings.Contains(s, c) {
			t.Errorf("%q: versions %q %q not from the input", s, d, c)
		}
	})
}
