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

// WriteDataCenterProfiles prints the data-center profiles as a table, each
// with its time to first token and per token alone at the published
// tables' shortest input (ISL 1000 and a 1120×1120 image for the Llama
// models, a 1648×2048 page for nemoretriever-parse).
func WriteDataCenterProfiles(w io.Writer, ps []Profile) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GPU\tMODEL\tPRECISION\tTP\tPROMPT TOKENS\tTTFT\tITL\tMAX THROUGHPUT LINES")
	for _, p := range ps {
		if p.DC == nil {
			continue
		}
		n := publishedPromptTokens(p.Model, 1000, 1120, 1120)
		if strings.Contains(strings.ToLower(p.Model), "nemoretriever") {
			n = publishedPromptTokens(p.Model, 0, 1648, 2048)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%.0f ms\t%.1f ms\t%d\n", p.Device, p.Model, p.Quantization, p.TP(), n,
			1000*p.DC.ttft.at(float64(n)), 1000*p.DC.itl.at(float64(n)), len(p.DC.lines))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing data-center profiles: %w", err)
	}
	fmt.Fprintf(w, "%d data-center profiles, fitted from NVIDIA's published vision NIM tables (--tp sets the size); every run on them is SIMULATED.\n", len(ps))
	return nil
}
