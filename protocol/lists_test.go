package protocol

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseLists(t *testing.T) {
	sizes, err := ParseSizeList(" 2k, 480p ,,")
	if err != nil || !reflect.DeepEqual(sizes, []string{"2K", "480p"}) {
		t.Errorf("sizes %q, %v", sizes, err)
	}
	ns, err := ParseIntList("1, 2,16", 1, 16)
	if err != nil || !reflect.DeepEqual(ns, []int{1, 2, 16}) || JoinInts(ns) != "1,2,16" {
		t.Errorf("ints %v, %v", ns, err)
	}
	for v, want := range map[string]string{"720p,4K": `image size "4K"`, "720p,720P": "720p is listed twice", " , ": "at least one size"} {
		if _, err := ParseSizeList(v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("sizes %q: %v, want %q", v, err, want)
		}
	}
	for v, want := range map[string]string{"1,0": `"0" is not a whole number in 1..16`, "2,2": "2 is listed twice", "x": `"x"`, "": "at least one number"} {
		if _, err := ParseIntList(v, 1, 16); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ints %q: %v, want %q", v, err, want)
		}
	}
}
