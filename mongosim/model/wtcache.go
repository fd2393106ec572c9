package model

// wtCache is the WiredTiger cache's fill. It holds part of the data set
// when the process starts; every document read misses with the chance that
// its page is not cached (uniform access over the data set) and the miss
// brings the page in, until the cache reaches what it keeps: the data set,
// or the eviction target share of its size when the data set is larger.
type wtCache struct {
	size    int64
	keep    int64 // min(data set, eviction target × size)
	dataSet int64
	fill    int64
}

func newWTCache(size int64, evictionTarget float64, dataSet int64, initial float64) wtCache {
	keep := min(dataSet, int64(float64(size)*evictionTarget/100))
	keep = max(keep, 0)
	return wtCache{size: size, keep: keep, dataSet: max(dataSet, 1), fill: int64(float64(keep) * min(max(initial, 0), 1))}
}

// read accounts for bytes of documents read from the collection.
func (c *wtCache) read(bytes float64) {
	if c.fill >= c.keep || bytes <= 0 {
		return
	}
	miss := bytes * (1 - float64(c.fill)/float64(c.dataSet))
	c.fill = min(c.keep, c.fill+int64(miss))
}
