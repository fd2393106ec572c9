// Package changepoint finds the nights at which a benchmark metric changed
// for good, so the nightly pipeline can tell a lasting shift in query memory
// load shedding results from ordinary night-to-night noise.
//
// # Method
//
// The detector is E-Divisive with means: the energy-statistic divisive
// algorithm of Matteson and James (JASA 2014), in the form MongoDB's
// performance CI uses it (Daly et al., ICPE 2020), with distance exponent
// alpha = 1.
//
// For a segment of observations and a split into a left part X (m values)
// and a right part Y (n values), the divergence statistic is
//
//	q̂ = mn/(m+n) · ( 2/(mn)·Σ|x−y| − 2/(m(m−1))·Σ|x−x'| − 2/(n(n−1))·Σ|y−y'| )
//
// where the first sum runs over all cross pairs and the other two over the
// unordered pairs inside X and inside Y (a within term is zero when its part
// has a single value). The bracket estimates the energy distance between
// the distributions of the two parts, zero when they are the same; the
// factor mn/(m+n) makes q̂ grow with the amount of evidence as well as with
// the size of the difference. As in MongoDB's version, Y always runs to the
// end of the segment (the paper also searches over Y's right end).
//
// Detection is a top-down bisection. The best split of every current segment
// is computed; the largest of them is the candidate. Its significance is
// judged by a permutation test: each segment is shuffled independently, the
// best split of every shuffled segment is computed again, and the largest of
// those is one draw of the statistic under "no further change". With R draws,
// of which c reach the candidate's q̂, the p-value is (c+1)/(R+1), the form of
// Matteson and James (MongoDB uses c/(R+1), which is slightly
// anti-conservative: its level is about 6/101 instead of 5/101 at the
// defaults). A candidate with p-value at most Options.PValue becomes a change
// point and splits its segment; the first candidate that fails ends the
// search. Because the search stops at the first non-significant test, a
// series with no change at all is reported as changed with probability at
// most PValue, however many segments later tests would have looked at; and
// because each test takes the maximum over all segments, no per-segment
// correction is needed.
//
// # Nights with several samples
//
// DetectGroups takes one slice of samples per night. Splits fall only
// between nights, and q̂ is computed over the individual samples, so X is
// every sample of the nights before the split. The permutation test shuffles
// whole nights, never single samples: the samples of one night share that
// night's build, machine and conditions, so they are not exchangeable with
// samples of other nights even when nothing changed, whereas the nights
// themselves are. Shuffling samples would treat ordinary night-to-night
// variation as evidence of a change and flag far too many series.
//
// # Defaults and reproducibility
//
// PValue 0.05, Permutations 100, Seed 1234 (the values MongoDB uses), and
// MinSegment 2: no segment, including the first and the last, is shorter than
// two values (two nights for DetectGroups). The permutation streams are
// derived from the seed and the segment bounds, so the same input and options
// give the same change points and p-values, whatever the number of workers.
//
// # Complexity
//
// q̂ for every split of a segment of n values costs O(n²) time and O(n)
// memory: moving one value from Y to X changes the three sums by that value's
// distances to the values before and after it, and the total distance of each
// value to the rest of the segment does not depend on the order, so each
// shuffle needs only the n(n−1)/2 distances to earlier values. A detection
// run costs about R·n²/2 distance terms per test over a segment of n
// values. The shuffles of a segment are drawn once and reused by later
// tests, and a test stops drawing once its candidate cannot pass any more,
// so a series with no change usually costs a fraction of one full test. For
// nights, the sums of sample distances between every two nights are
// computed once (O(N²) for N samples and 8·G² bytes for G nights; used when
// nights average two samples or more, up to 2048 nights); after that a
// shuffle costs O(G²), whatever the samples per night. Beyond 2048 nights a
// shuffle costs O(N²) but needs no matrix.
package changepoint
