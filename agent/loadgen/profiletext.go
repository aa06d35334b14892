package loadgen

import (
	"math/rand/v2"
	"strings"
)

// profileVocabulary are the words a profile's text is made of: common,
// short, lower case, so that a tokenizer gives each about the same tokens
// wherever it stands.
const profileVocabulary = `time year people way day man thing woman life child world school state family
student group country problem hand part place case week company system program question work government
number night point home water room mother area money story fact month lot right study book eye job word
business issue side kind head house service friend father power hour game line end member law car city
community name president team minute idea kid body information back parent face others level office door
health person art war history party result change morning reason research girl guy moment air teacher
force education foot boy age policy process music market sense nation plan college interest death
experience effect use class control care field development role effort rate heart drug show leader light
voice wife police mind price report decision son view relationship town road arm difference value building
action model season society tax director position player record paper space ground form event official
matter center couple site project activity star table need court oil situation cost industry figure street
image phone data picture practice piece land product doctor wall patient worker news test movie north love
support technology step baby computer type attention film tree source organization hair window evidence
population site truth garden river bridge stone cloud apple orange bread glass paper metal silver`

// textOf is a profile request's text: words words of the vocabulary,
// always the same words for the same count (so that every request of a
// level has the tokens the calibration measured), in an order of the
// seed's (so that no prefix cache finds one request's text in another's).
func textOf(vocab []string, words int, seed uint64) string {
	if words < 1 || len(vocab) == 0 {
		return ""
	}
	order := make([]int, words)
	for i := range order {
		order[i] = i % len(vocab)
	}
	rng := rand.New(rand.NewPCG(seed, 0x6a09e667f3bcc908))
	rng.Shuffle(words, func(i, j int) { order[i], order[j] = order[j], order[i] })
	var b strings.Builder
	b.Grow(words * 8)
	for i, k := range order {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(vocab[k])
	}
	return b.String()
}
