package explorer

import "testing"

func TestFormats(t *testing.T) {
	for _, c := range []struct {
		f    func(float64) string
		name string
		in   float64
		want string
	}{
		{FormatSeconds, "seconds", 4, "4"},
		{FormatSeconds, "seconds", 0.5, "0.5"},
		{FormatSeconds, "seconds", 18.39, "18.39"},
		{FormatSeconds, "seconds", 23.3, "23.3"},
		{FormatSeconds, "seconds", 0.09, "0.09"},
		{FormatSeconds, "seconds", 3.004, "3"},
		{FormatSeconds, "seconds", 2.996, "3"},
		{FormatSeconds, "seconds", 0.001, "0"},
		{FormatSeconds, "seconds", 120.456, "120.46"},
		{FormatTPS, "tok/s", 12, "12"},
		{FormatTPS, "tok/s", 310.3, "310.3"},
		{FormatTPS, "tok/s", 87.96, "88"},
		{FormatTPS, "tok/s", 45.64, "45.6"},
		{FormatParams, "params", 2.4, "2.4"},
		{FormatParams, "params", 8, "8.0"},
		{FormatParams, "params", 0.5, "0.5"},
		{FormatParams, "params", 26, "26"},
		{FormatParams, "params", 12.6, "13"},
		{FormatParams, "params", 9.96, "10"},
		{FormatParams, "params", 235, "235"},
	} {
		if got := c.f(c.in); got != c.want {
			t.Errorf("%s %g: %q, want %q", c.name, c.in, got, c.want)
		}
	}
}
