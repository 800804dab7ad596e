package orderwriter

import "github.com/segmentio/kafka-go"

// offsets tracks which messages of a round are done (written in MySQL and
// applied in Redis, or dead-lettered) and yields, per partition, the last
// message of the done prefix. kafka-go commits per-partition maximum offsets,
// so committing a message commits every earlier one of its partition: only a
// gap-free prefix may be committed.
type offsets struct {
	parts map[int][]*entry // per partition, in fetch (offset) order
}

// entry is one fetched message of a round.
type entry struct {
	msg  kafka.Message
	done bool
}

func newOffsets(batch []*entry) *offsets {
	o := &offsets{parts: map[int][]*entry{}}
	for _, e := range batch {
		o.parts[e.msg.Partition] = append(o.parts[e.msg.Partition], e)
	}
	return o
}

// committable returns, per partition, the last message before the first one
// not done.
func (o *offsets) committable() []kafka.Message {
	var out []kafka.Message
	for _, es := range o.parts {
		last := -1
		for i, e := range es {
			if !e.done {
				break
			}
			last = i
		}
		if last >= 0 {
			out = append(out, es[last].msg)
		}
	}
	return out
}
