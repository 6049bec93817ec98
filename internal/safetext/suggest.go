package safetext

// This file finds what a mistyped name was meant to be: the "did you
// mean" of an unknown config key or gate name.

import "strings"

// Closest returns the known name closest to k by edit distance
// (Levenshtein, k compared in lower case) when it is close enough to be
// a typo — at most 2 edits — or "". Ties go to the first in known. A k
// longer than 64 bytes gets no suggestion (and costs nothing).
func Closest(k string, known []string) string {
	if len(k) > 64 {
		return ""
	}
	best, bestD := "", 3
	for _, c := range known {
		d := distance(strings.ToLower(k), c)
		if d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// distance is the Levenshtein distance of a and b, in bytes.
func distance(a, b string) int {
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
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
