package devicefacts

import (
	"strings"
	"testing"
)

func TestParseTegraRelease(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, DATE: Wed Jan  8 01:49:37 UTC 2025\n# KERNEL_VARIANT: oot", "36.4.3"},
		{"# R35 (release), REVISION: 5.0, GCID: 35550185, BOARD: t186ref, EABI: aarch64", "35.5.0"},
		{"# R35 (release), REVISION: 4.1, GCID: 33958178, BOARD: t186ref", "35.4.1"},
		{"# R32 (release), REVISION: 7, GCID: 1", "32.7.0"},
	} {
		got, err := ParseTegraRelease(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("%q: got %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "R36", "# R36 (release)", "garbage\nmore"} {
		if _, err := ParseTegraRelease(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

func TestJetPackFor(t *testing.T) {
	for _, tc := range []struct {
		l4t, want string
		exact     bool
	}{
		{"36.4.3", "6.2", true}, {"36.4.4", "6.2.1", true}, {"36.3.0", "6.0", true},
		{"35.6.0", "5.1.4", true}, {"35.5.0", "5.1.3", true}, {"35.4.1", "5.1.2", true},
		{"36.4.9", "6.2", false}, {"99.1.0", "", false},
	} {
		got, exact := JetPackFor(tc.l4t)
		if got != tc.want || exact != tc.exact {
			t.Errorf("%s: got %q exact=%v, want %q exact=%v", tc.l4t, got, exact, tc.want, tc.exact)
		}
	}
}

func TestParseNVPModel(t *testing.T) {
	for _, tc := range []struct {
		in   string
		mode string
		id   int
		ok   bool
	}{
		{"NV Power Mode: MAXN\n0\n", "MAXN", 0, true},
		{"NVPM WARN: fan mode is not set!\nNV Power Mode: 15W\n1\n", "15W", 1, true},
		{"NV Power Mode: MAXN_SUPER", "MAXN_SUPER", -1, true},
		{"NVPM ERROR: failed", "", -1, false},
	} {
		mode, id, ok := ParseNVPModel(tc.in)
		if mode != tc.mode || id != tc.id || ok != tc.ok {
			t.Errorf("%q: got %q %d %v", tc.in, mode, id, ok)
		}
	}
}

func TestDisplayNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		maxW float64
		want string
	}{
		{"NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", 300, "RTX PRO 6000 Max-Q"},
		{"NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 600, "RTX PRO 6000"},
		{"NVIDIA RTX PRO 6000 Blackwell", 300, "RTX PRO 6000 Max-Q"},
		{"NVIDIA RTX PRO 6000 Blackwell", 600, "RTX PRO 6000"},
		{"NVIDIA RTX PRO 6000 Blackwell Server Edition", 600, "RTX PRO 6000 Server"},
		{"NVIDIA H200", 700, "H200"},
		{"NVIDIA GeForce RTX 4090", 600, "GeForce RTX 4090"},
		{"", 0, "NVIDIA GPU"},
	} {
		if got := GPUDisplayName(tc.name, tc.maxW); got != tc.want {
			t.Errorf("GPUDisplayName(%q, %v) = %q, want %q", tc.name, tc.maxW, got, tc.want)
		}
	}
	for _, tc := range []struct{ model, want string }{
		{"NVIDIA Jetson AGX Orin Developer Kit", "Jetson AGX Orin"},
		{"NVIDIA Jetson Orin NX Engineering Reference Developer Kit", "Jetson Orin NX"},
		{"NVIDIA Jetson Orin Nano Engineering Reference Developer Kit Super", "Jetson Orin Nano"},
		{"NVIDIA Jetson Xavier NX Developer Kit", "Jetson Xavier NX"},
		{"NVIDIA Jetson Something New Developer Kit", "Jetson Something New"},
	} {
		if got := JetsonDisplayName(tc.model); got != tc.want {
			t.Errorf("JetsonDisplayName(%q) = %q, want %q", tc.model, got, tc.want)
		}
	}
}

func TestParseMemTotalKB(t *testing.T) {
	if kb, err := ParseMemTotalKB("MemTotal:       16031744 kB\nMemFree: 1 kB\n"); err != nil || kb != 16031744 {
		t.Errorf("got %d, %v", kb, err)
	}
	for _, bad := range []string{"", "MemFree: 1 kB", "MemTotal: lots kB", "MemTotal:"} {
		if _, err := ParseMemTotalKB(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

func FuzzParseTegraRelease(f *testing.F) {
	f.Add("# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic")
	f.Add("# R32 (release), REVISION: 7")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		l4t, err := ParseTegraRelease(s)
		if err == nil && strings.Count(l4t, ".") != 2 {
			t.Errorf("%q gave %q", s, l4t)
		}
		JetPackFor(l4t)
	})
}

func FuzzParseNVPModel(f *testing.F) {
	f.Add("NV Power Mode: MAXN\n0\n")
	f.Add("NV Power Mode:\n")
	f.Fuzz(func(t *testing.T, s string) {
		mode, _, ok := ParseNVPModel(s)
		if ok && mode == "" {
			t.Errorf("%q: ok without a mode", s)
		}
	})
}

func FuzzParseMemTotalKB(f *testing.F) {
	f.Add("MemTotal:       16031744 kB\n")
	f.Add("MemTotal: -1 kB")
	f.Fuzz(func(t *testing.T, s string) {
		if kb, err := ParseMemTotalKB(s); err == nil && kb < 0 {
			t.Errorf("%q: negative %d", s, kb)
		}
	})
}
