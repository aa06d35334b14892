package simengine

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteProfiles prints the calibrated profiles as a table, each with its
// figures at 720p and Max Cameras at a 3 s target.
func WriteProfiles(w io.Writer, ps []Profile) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DEVICE\tMODEL\tPARAMS\tQUANT\tENGINE\tTTFT 720p\tTPS\tMAX CAM @3s\tMAX IMAGES\tMAX SIZE")
	for _, p := range ps {
		maxCam := "-"
		for _, t := range p.Targets {
			if t.TargetS == 3 {
				maxCam = fmt.Sprint(t.Max)
				if t.Plus {
					maxCam += "+"
				}
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%gB\t%s\t%s\t%.2fs\t%.1f\t%s\t%d\t%s\n", p.Device, p.Model, p.ParamsB,
			p.Quantization, p.Engine, p.TTFT720, p.TPS, maxCam, p.MaxImages, p.MaxSize)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing profiles: %w", err)
	}
	fmt.Fprintf(w, "%d profiles (%s), calibrated from the published figures; every run on them is SIMULATED.\n",
		len(ps), strings.Join(Devices(), ", "))
	return nil
}
