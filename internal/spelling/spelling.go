// Package spelling finds what a misspelled name was probably meant to be, among the names that
// exist, for error messages ("mdoe: unknown field; did you mean mode?"). It suggests only close
// matches: a name that is close to none is left without a suggestion.
package spelling

// Suggest returns the candidate nearest to word by edit distance (insertions, deletions,
// substitutions and swaps of neighbours each count one), if it is near enough: at most one edit
// for short words, two for longer ones, and never more than a third of the word. Ties go to the
// earlier candidate.
func Suggest(word string, candidates []string) (string, bool) {
	limit := 1
	if len(word) >= 6 {
		limit = 2
	}
	best, bestD := "", limit+1
	for _, c := range candidates {
		if c == word {
			continue
		}
		if d := distance(word, c); d < bestD && d*3 <= max(len(word), 1) {
			best, bestD = c, d
		}
	}
	return best, best != ""
}

// distance is the optimal string alignment distance between a and b, in bytes.
func distance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
