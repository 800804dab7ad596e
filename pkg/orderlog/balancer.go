package orderlog

import (
	"bytes"
	"hash/fnv"
	"strconv"

	"github.com/segmentio/kafka-go"
)

// StockBalancer places an order message by its stock key (Key): bucket 0's
// key "<item>" goes exactly where kafka.Hash puts it, so an unbucketed item
// stays on the partition it always had, and bucket b of the same item goes
// b partitions further along. An item's buckets thus take distinct
// partitions, as many as there are, where hashing each bucket's key on its
// own let them collide: 8 buckets over 8 partitions landed on 8 distinct
// ones in only 9 of 27 bench runs, so one consumer replica wrote several
// buckets while another idled.
type StockBalancer struct {
	hash kafka.Hash
}

// Balance implements kafka.Balancer.
func (b *StockBalancer) Balance(msg kafka.Message, partitions ...int) int {
	item, bucketPart, ok := bytes.Cut(msg.Key, []byte{'.'})
	if !ok {
		return b.hash.Balance(msg, partitions...)
	}
	bucket, err := strconv.Atoi(string(bucketPart))
	if err != nil || bucket < 0 {
		return b.hash.Balance(msg, partitions...)
	}
	return partitions[(homeIndex(item, len(partitions))+bucket)%len(partitions)]
}

// homeIndex is kafka.Hash's choice for key among n partitions (FNV-1a,
// the int32 remainder made positive, as Sarama does).
func homeIndex(key []byte, n int) int {
	h := fnv.New32a()
	_, _ = h.Write(key)
	p := int32(h.Sum32()) % int32(n)
	if p < 0 {
		p = -p
	}
	return int(p)
}
