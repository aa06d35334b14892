package profiles

import (
	"slices"
	"strings"

	"github.com/vlmfleet/vlmfleet/protocol"
)

// gpuIdentity is a GPU's name as a line's identity compares it. A lab's
// measured line carries the name nvidia-smi reports ("NVIDIA H100 80GB
// HBM3", "NVIDIA A100-SXM4-80GB"); the published tables spell the same
// GPUs "H100-HBM3-80GB" and "H100-SXM-80GB", "A100-SXM4-80GB" and
// "A100-SXM-80GB". So the vendor's name is dropped, the words are
// compared in any order and separator, the SXM generations (SXM4 of the
// A100, SXM5 of the H100) are one form factor, and an 80 GB H100 with
// HBM3 is the SXM one (the PCIe card has HBM2e and says "PCIe"; the NVL
// says "NVL").
func gpuIdentity(name string) string {
	words := strings.FieldsFunc(fold(name), func(r rune) bool { return r == ' ' || r == '-' || r == '_' })
	words = slices.DeleteFunc(words, func(w string) bool { return w == "nvidia" })
	h100 := slices.Contains(words, "h100")
	for i, w := range words {
		switch {
		case w == "sxm4" || w == "sxm5":
			words[i] = "sxm"
		case w == "hbm3" && h100:
			words[i] = "sxm"
		}
	}
	slices.Sort(words)
	return strings.Join(slices.Compact(words), " ")
}

// gpuSpellings is how the published lines spell each GPU identity: by
// model (the H100 of one model's lines is "H100-HBM3-80GB", of another's
// "H100-SXM-80GB"), and the first spelling of any model.
type gpuSpellings struct {
	byModel, any map[string]string
}

func spellingsOf(published []protocol.ProfileRow) gpuSpellings {
	s := gpuSpellings{byModel: map[string]string{}, any: map[string]string{}}
	for _, r := range published {
		id := gpuIdentity(r.GPU)
		if _, ok := s.any[id]; !ok {
			s.any[id] = r.GPU
		}
		if k := fold(r.Model) + "\x00" + id; s.byModel[k] == "" {
			s.byModel[k] = r.GPU
		}
	}
	return s
}

// spell is the page's spelling of a measured row's GPU: the one its
// model's published lines use, else any published line's, else its own.
func (s gpuSpellings) spell(r protocol.ProfileRow) string {
	id := gpuIdentity(r.GPU)
	if g, ok := s.byModel[fold(r.Model)+"\x00"+id]; ok {
		return g
	}
	if g, ok := s.any[id]; ok {
		return g
	}
	return r.GPU
}
