package imageset

import (
	"image"
	"image/draw"
	"image/png"
	"os"
	"testing"
)

// TestDumpScenes writes a contact sheet of the builtin scenes, drawn at
// 480×270, to $VLMFLEET_DUMP_SCENES/sheet.png: for looking at them.
func TestDumpScenes(t *testing.T) {
	dir := os.Getenv("VLMFLEET_DUMP_SCENES")
	if dir == "" {
		t.Skip("set VLMFLEET_DUMP_SCENES to a directory to get a contact sheet")
	}
	const w, h = 480, 270
	sheet := image.NewRGBA(image.Rect(0, 0, 4*w, 4*h))
	for i, sc := range scenes() {
		r := image.Rect(i%4*w, i/4*h, i%4*w+w, i/4*h+h)
		draw.Draw(sheet, r, render(sc, w, h).image(), image.Point{}, draw.Src)
	}
	f, err := os.Create(dir + "/sheet.png")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, sheet); err != nil {
		t.Fatal(err)
	}
}
