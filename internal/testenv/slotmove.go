package testenv

import (
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// SlotNode is one Redis Cluster primary as a slot move addresses it: its
// address, its node id and a plain client to it (not a cluster client: a
// move speaks to each node about its own view of the slot).
type SlotNode struct {
	Addr, ID string
	C        *redis.Client
}

// ClusterNodeAt connects to the cluster node at addr and reads its id; the
// client closes with the test.
func ClusterNodeAt(t testing.TB, addr string) SlotNode {
	t.Helper()
	NeedStack(t, "the Redis Cluster")
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	id, err := c.Do(context.Background(), "CLUSTER", "MYID").Text()
	if err != nil {
		t.Fatalf("cluster myid of %s: %v", addr, err)
	}
	return SlotNode{Addr: addr, ID: id, C: c}
}

// MoveTargets names where a slot on home can move: dst, the first other
// primary of cc, and others, the rest (the primaries that a move must also
// tell of the slot's new owner, MoveSlot and PutSlotBack).
func MoveTargets(t testing.TB, cc *redis.ClusterClient, home SlotNode) (dst SlotNode, others []SlotNode) {
	t.Helper()
	for _, a := range Primaries(t, cc) {
		switch {
		case a == home.Addr:
		case dst.Addr == "":
			dst = ClusterNodeAt(t, a)
		default:
			others = append(others, ClusterNodeAt(t, a))
		}
	}
	return dst, others
}

// SlotOwner returns the address of the primary that n's view of the cluster
// gives slot to ("" if none).
func SlotOwner(t testing.TB, n SlotNode, slot int) string {
	t.Helper()
	slots, err := n.C.ClusterSlots(context.Background()).Result()
	if err != nil {
		t.Fatalf("cluster slots from %s: %v", n.Addr, err)
	}
	for _, s := range slots {
		if s.Start <= slot && slot <= s.End && len(s.Nodes) > 0 {
			return s.Nodes[0].Addr
		}
	}
	return ""
}

// MoveSlot moves slot from src to dst the way `redis-cli --cluster
// reshard` does: CLUSTER SETSLOT IMPORTING on dst, MIGRATING on src,
// MIGRATE of the slot's keys, SETSLOT NODE on dst, src and the others (the
// target first, so it never answers MOVED back to the source). batch is
// the number of keys per MIGRATE (redis-cli's --cluster-pipeline; 1 moves
// key by key). at(phase) is called at each stage: "migrating" (every key
// still on src), "split" after each MIGRATE that left keys on src,
// "asking" (every key on dst, the slot not yet handed over). Shared by the
// stock package's slot tests and the fault suite's migration under load.
func MoveSlot(t testing.TB, slot int, src, dst SlotNode, others []SlotNode, batch int, at func(phase string)) {
	t.Helper()
	ctx := context.Background()
	do := func(n SlotNode, args ...any) {
		t.Helper()
		if err := n.C.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%s: %v: %v", n.Addr, args, err)
		}
	}
	host, port, err := net.SplitHostPort(dst.Addr)
	if err != nil {
		t.Fatal(err)
	}
	batch = max(1, batch)
	do(dst, "CLUSTER", "SETSLOT", slot, "IMPORTING", src.ID)
	do(src, "CLUSTER", "SETSLOT", slot, "MIGRATING", dst.ID)
	at("migrating")
	for {
		keys, err := src.C.ClusterGetKeysInSlot(ctx, slot, batch).Result()
		if err != nil {
			t.Fatalf("cluster getkeysinslot %d on %s: %v", slot, src.Addr, err)
		}
		if len(keys) == 0 {
			break
		}
		// MIGRATE host port "" 0 timeout KEYS k...: keys that expired
		// since GETKEYSINSLOT are skipped (NOKEY when none is left).
		args := []any{"MIGRATE", host, port, "", 0, (5 * time.Second).Milliseconds(), "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		if err := src.C.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("migrate %d keys of slot %d to %s: %v", len(keys), slot, dst.Addr, err)
		}
		n, err := src.C.ClusterCountKeysInSlot(ctx, slot).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			at("split")
		}
	}
	at("asking")
	do(dst, "CLUSTER", "SETSLOT", slot, "NODE", dst.ID)
	do(src, "CLUSTER", "SETSLOT", slot, "NODE", dst.ID)
	for _, o := range others {
		do(o, "CLUSTER", "SETSLOT", slot, "NODE", dst.ID)
	}
}

// PutSlotBack repairs a move a test left half-done or did not undo:
// `redis-cli --cluster fix` closes an open slot (moving its keys to one
// owner), then the slot is moved home if it ended on other. For cleanups:
// it reports with t.Errorf, never stops the test.
func PutSlotBack(t testing.TB, slot int, home, other SlotNode, others []SlotNode) {
	out, err := exec.Command("redis-cli", "--cluster", "fix", home.Addr, "--cluster-yes").CombinedOutput()
	if err != nil {
		t.Errorf("redis-cli --cluster fix: %v\n%s", err, out)
		return
	}
	switch owner := SlotOwner(t, home, slot); owner {
	case home.Addr:
	case other.Addr:
		MoveSlot(t, slot, other, home, others, 100, func(string) {})
	default:
		t.Errorf("slot %d left on %q after the fix; move it back to %s with redis-cli --cluster reshard", slot, owner, home.Addr)
	}
	if strings.Contains(string(out), "[ERR]") {
		t.Logf("redis-cli --cluster fix:\n%s", out)
	}
}

// ItemInEmptySlot returns a fresh item whose slot holds no key yet, and
// that slot, so a slot move carries only the test's own keys.
func ItemInEmptySlot(t testing.TB, cc *redis.ClusterClient) (int64, int) {
	t.Helper()
	ctx := context.Background()
	for range 100 {
		id := ItemID()
		slot, err := cc.ClusterKeySlot(ctx, stock.KeysOf(id).Stock).Result()
		if err != nil {
			t.Fatal(err)
		}
		n, err := ClusterNodeAt(t, PrimaryOf(t, cc, id)).C.ClusterCountKeysInSlot(ctx, int(slot)).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return id, int(slot)
		}
	}
	t.Fatal("no item in an empty slot among 100")
	return 0, 0
}
