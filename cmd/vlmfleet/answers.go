package main

import (
	"fmt"
	"io"

	"github.com/vlmfleet/vlmfleet/explorer"
)

// writeAnswers prints the explorer's answer at q with cameras back to
// back, as published, then at each frame interval: the table and the
// rows' sentences, each under a line that says whose answer it is (title)
// and how it was read.
func writeAnswers(w io.Writer, title string, ds explorer.Dataset, q explorer.Query, intervals []float64) error {
	for _, t := range append([]float64{0}, intervals...) {
		q.Interval = t
		how := "cameras back to back"
		if t > 0 {
			how = "one frame every " + explorer.FormatInterval(t) + " s per camera"
		}
		fmt.Fprintf(w, "\n%s: the explorer at %s, %s, one image per camera, %s; judged by %s\n",
			title, q.Size, explorer.Plural(q.Cameras, "camera"), how, q.Judgement().Describe())
		if err := explorer.WriteAnswer(w, ds, q); err != nil {
			return err
		}
	}
	return nil
}
