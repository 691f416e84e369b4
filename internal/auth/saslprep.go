package auth

import (
	"sort"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// saslPrep applies SASLprep (RFC 4013) the way PostgreSQL's pg_saslprep
// does when it hashes a SCRAM password: pure ASCII is used as is (even
// control characters), anything that fails SASLprep (invalid UTF-8, a
// prohibited or unassigned code point, a bidi violation, empty after
// mapping) falls back to the raw bytes, exactly as the server does.
// The RFC 3454 tables are Unicode 3.2 (saslprep_tables.go); NFKC comes
// from golang.org/x/text, whose Unicode version is newer than PostgreSQL's,
// which only matters for characters PostgreSQL's tables do not know.
func saslPrep(password string) string {
	raw := password
	if isASCII(password) || !utf8.ValidString(password) {
		return raw
	}
	mapped := make([]rune, 0, len(password))
	for _, r := range password {
		switch {
		case inRanges(r, nonASCIISpaces):
			mapped = append(mapped, ' ')
		case inRanges(r, mappedToNothing):
		default:
			mapped = append(mapped, r)
		}
	}
	if len(mapped) == 0 {
		return raw
	}
	out := norm.NFKC.String(string(mapped))
	if !prepAllowed(out) {
		return raw
	}
	return out
}

func prepAllowed(s string) bool {
	hasRandAL, hasL := false, false
	var first, last rune = -1, -1
	for _, r := range s {
		if inRanges(r, prohibitedOutput) || inRanges(r, unassigned32) {
			return false
		}
		randAL, l := bidiClass(r)
		hasRandAL = hasRandAL || randAL
		hasL = hasL || l
		if first < 0 {
			first = r
		}
		last = r
	}
	if !hasRandAL {
		return true
	}
	firstRAL, _ := bidiClass(first)
	lastRAL, _ := bidiClass(last)
	return !hasL && firstRAL && lastRAL
}

func bidiClass(r rune) (randAL, l bool) {
	return inRanges(r, randALCat), inRanges(r, lCat)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

type runeRange struct{ lo, hi rune }

// inRanges reports whether r is in table, which is sorted and disjoint.
func inRanges(r rune, table []runeRange) bool {
	i := sort.Search(len(table), func(i int) bool { return table[i].hi >= r })
	return i < len(table) && table[i].lo <= r
}

// RFC 3454 C.1.2.
var nonASCIISpaces = []runeRange{
	{0x00A0, 0x00A0}, {0x1680, 0x1680}, {0x2000, 0x200B}, {0x202F, 0x202F},
	{0x205F, 0x205F}, {0x3000, 0x3000},
}

// RFC 3454 B.1.
var mappedToNothing = []runeRange{
	{0x00AD, 0x00AD}, {0x034F, 0x034F}, {0x1806, 0x1806}, {0x180B, 0x180D},
	{0x200B, 0x200D}, {0x2060, 0x2060}, {0xFE00, 0xFE0F}, {0xFEFF, 0xFEFF},
}

// RFC 3454 C.1.2, C.2.1, C.2.2, C.3, C.4, C.5, C.6, C.7, C.8, C.9.
var prohibitedOutput = []runeRange{
	{0x0000, 0x001F}, {0x007F, 0x009F}, {0x00A0, 0x00A0}, {0x0340, 0x0341},
	{0x06DD, 0x06DD}, {0x070F, 0x070F}, {0x1680, 0x1680}, {0x180E, 0x180E},
	{0x2000, 0x200F}, {0x2028, 0x202F}, {0x205F, 0x2063}, {0x206A, 0x206F},
	{0x2FF0, 0x2FFB}, {0x3000, 0x3000}, {0xD800, 0xF8FF}, {0xFDD0, 0xFDEF},
	{0xFEFF, 0xFEFF}, {0xFFF9, 0xFFFF}, {0x1D173, 0x1D17A}, {0x1FFFE, 0x1FFFF},
	{0x2FFFE, 0x2FFFF}, {0x3FFFE, 0x3FFFF}, {0x4FFFE, 0x4FFFF}, {0x5FFFE, 0x5FFFF},
	{0x6FFFE, 0x6FFFF}, {0x7FFFE, 0x7FFFF}, {0x8FFFE, 0x8FFFF}, {0x9FFFE, 0x9FFFF},
	{0xAFFFE, 0xAFFFF}, {0xBFFFE, 0xBFFFF}, {0xCFFFE, 0xCFFFF}, {0xDFFFE, 0xDFFFF},
	{0xE0001, 0xE0001}, {0xE0020, 0xE007F}, {0xEFFFE, 0x10FFFF},
}
