package draw_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/waitroom/draw"
)

// update rewrites the golden worked example instead of checking it:
//
//	go test ./pkg/waitroom/draw/ -run TestFairnessExample -update
var update = flag.Bool("update", false, "rewrite testdata/fairness-example.json")

const examplePath = "testdata/fairness-example.json"

// The worked example of docs/fairness.md. Its inputs are fixed here; its
// outputs are computed twice, by the package and by hand from the spec's
// bytes (sha256, HMAC and Ed25519 of the standard library, nothing of the
// package), must agree, and must equal the golden file byte for byte.
type example struct {
	Inputs     exampleInputs        `json:"inputs"`
	Commitment string               `json:"commitment"`
	Tickets    []exampleTicket      `json:"tickets"`
	Rounds     []exampleRound       `json:"rounds"`
	Order      []examplePlace       `json:"serving_order"`
	Proof      exampleProof         `json:"inclusion_proof"`
	Receipt    exampleReceipt       `json:"receipt"`
	Transcript draw.RoundTranscript `json:"transcript"`
}

type exampleInputs struct {
	Seed    string `json:"seed"`
	Item    int64  `json:"item"`
	Tickets []struct {
		Arrival int64  `json:"arrival"`
		ID      string `json:"id"`
	} `json:"tickets"`
	Rounds []struct {
		N      int    `json:"n"`
		First  int64  `json:"first"`
		Last   int64  `json:"last"`
		Beacon string `json:"beacon"`
	} `json:"rounds"`
	ReceiptKeySeed string `json:"receipt_key_seed"`
	Receipt        struct {
		Arrival   int64  `json:"arrival"`
		TakenAt   string `json:"taken_at"`
		TakenAtMs int64  `json:"taken_at_ms"`
	} `json:"receipt"`
}

type exampleTicket struct {
	Arrival int64  `json:"arrival"`
	ID      string `json:"id"`
	Hash    string `json:"hash"`
	Leaf    string `json:"leaf"`
	Round   int    `json:"round"`
	Rank    string `json:"rank"`
}

type exampleRound struct {
	N           int    `json:"n"`
	First       int64  `json:"first"`
	Last        int64  `json:"last"`
	Beacon      string `json:"beacon"`
	Root        string `json:"root"`
	SeedMessage string `json:"seed_message"`
	Seed        string `json:"seed"`
}

type examplePlace struct {
	Position int    `json:"position"`
	Arrival  int64  `json:"arrival"`
	Ticket   string `json:"ticket"`
}

type exampleProof struct {
	Round   int      `json:"round"`
	Arrival int64    `json:"arrival"`
	Index   int      `json:"index"`
	Size    int      `json:"size"`
	Root    string   `json:"root"`
	Proof   []string `json:"proof"`
}

type exampleReceipt struct {
	PublicKey string `json:"public_key"`
	KeyID     string `json:"key_id"`
	Payload   string `json:"payload"`
	Message   string `json:"message"`
	Signature string `json:"signature"`
	String    string `json:"string"`
}

func TestFairnessExample(t *testing.T) {
	var in exampleInputs
	// Inputs: seed = 00 01 .. 1f; item 42; ticket i's id = the hex of the 16
	// bytes 0x40+16(i-1) .. 0x4f+16(i-1); round 0 = arrivals 1..3, round 1 =
	// 4..5 with beacon 0a0b0c0d; the receipt key from seed 20 21 .. 3f; a
	// receipt for arrival 4 taken at 2026-12-24T10:00:00.250Z.
	var seed draw.Seed
	for i := range seed {
		seed[i] = byte(i)
	}
	in.Seed, in.Item = seed.String(), 42
	for i := range 5 {
		var id [16]byte
		for j := range id {
			id[j] = byte(0x40 + 16*i + j)
		}
		in.Tickets = append(in.Tickets, struct {
			Arrival int64  `json:"arrival"`
			ID      string `json:"id"`
		}{int64(i + 1), hex.EncodeToString(id[:])})
	}
	in.Rounds = append(in.Rounds, struct {
		N      int    `json:"n"`
		First  int64  `json:"first"`
		Last   int64  `json:"last"`
		Beacon string `json:"beacon"`
	}{0, 1, 3, ""}, struct {
		N      int    `json:"n"`
		First  int64  `json:"first"`
		Last   int64  `json:"last"`
		Beacon string `json:"beacon"`
	}{1, 4, 5, "0a0b0c0d"})
	keySeed := make([]byte, ed25519.SeedSize)
	for i := range keySeed {
		keySeed[i] = byte(0x20 + i)
	}
	in.ReceiptKeySeed = hex.EncodeToString(keySeed)
	takenAt := time.Date(2026, 12, 24, 10, 0, 0, 250e6, time.UTC)
	in.Receipt.Arrival, in.Receipt.TakenAt, in.Receipt.TakenAtMs = 4, takenAt.Format(time.RFC3339Nano), takenAt.UnixMilli()

	ex := example{Inputs: in, Commitment: seed.Commitment()}
	if c := sha256.Sum256(seed[:]); hex.EncodeToString(c[:]) != ex.Commitment {
		t.Fatalf("commitment %s", ex.Commitment)
	}

	// Hashes and leaves, by hand.
	entries := make([]draw.Entry, len(in.Tickets))
	hashes := make([][]byte, len(in.Tickets))
	leafs := make([][]byte, len(in.Tickets))
	for i, tk := range in.Tickets {
		h := sha256.Sum256([]byte(tk.ID)) // the id's 32 ASCII hex digits
		hashes[i] = h[:]
		if got := draw.Hash(tk.ID); got != hex.EncodeToString(h[:]) {
			t.Fatalf("Hash(%s) = %s, by hand %x", tk.ID, got, h)
		}
		l := sha256.Sum256(slices.Concat([]byte{0x00}, h[:], be64(tk.Arrival)))
		leafs[i] = l[:]
		entries[i] = draw.Entry{Ticket: hex.EncodeToString(h[:]), Arrival: tk.Arrival}
		// A tree of one leaf has the leaf as its root.
		if root, err := draw.MerkleRoot(entries[i : i+1]); err != nil || root != hex.EncodeToString(l[:]) {
			t.Fatalf("leaf of arrival %d: MerkleRoot %s (%v), by hand %x", tk.Arrival, root, err, l)
		}
		ex.Tickets = append(ex.Tickets, exampleTicket{Arrival: tk.Arrival, ID: tk.ID, Hash: entries[i].Ticket, Leaf: hex.EncodeToString(l[:])})
	}

	// Roots, by hand: round 0 has 3 leaves (split 2 + 1), round 1 has 2.
	node := func(l, r []byte) []byte {
		s := sha256.Sum256(slices.Concat([]byte{0x01}, l, r))
		return s[:]
	}
	handRoots := [][]byte{node(node(leafs[0], leafs[1]), leafs[2]), node(leafs[3], leafs[4])}

	var rounds []draw.Round
	for k, ri := range in.Rounds {
		r, err := draw.CloseRound(ri.N, ri.First, ri.Last, entries)
		if err != nil {
			t.Fatal(err)
		}
		if r.Root != hex.EncodeToString(handRoots[k]) {
			t.Fatalf("round %d root %s, by hand %x", k, r.Root, handRoots[k])
		}
		r.Beacon = ri.Beacon
		// The round seed's message and HMAC, by hand.
		beacon, _ := hex.DecodeString(ri.Beacon)
		msg := slices.Concat([]byte("flashsale/round-seed/v1"), be64(in.Item), be32(uint32(ri.N)),
			be64(ri.First), be64(ri.Last), handRoots[k], be16(uint16(len(beacon))), beacon)
		m := hmac.New(sha256.New, seed[:])
		m.Write(msg)
		handSeed := m.Sum(nil)
		rs, err := draw.RoundSeed(seed, in.Item, r)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(rs[:], handSeed) {
			t.Fatalf("round %d seed %s, by hand %x", k, rs, handSeed)
		}
		r.Seed = rs.String()
		rounds = append(rounds, r)
		ex.Rounds = append(ex.Rounds, exampleRound{N: r.N, First: r.First, Last: r.Last, Beacon: r.Beacon,
			Root: r.Root, SeedMessage: hex.EncodeToString(msg), Seed: r.Seed})
		// Ranks, by hand.
		for i := ri.First - 1; i < ri.Last; i++ {
			m := hmac.New(sha256.New, handSeed)
			m.Write(hashes[i])
			rank := m.Sum(nil)
			if got := draw.Rank(rs, entries[i].Ticket); !bytes.Equal(got[:], rank) {
				t.Fatalf("rank of arrival %d: %x, by hand %x", i+1, got, rank)
			}
			ex.Tickets[i].Round, ex.Tickets[i].Rank = k, hex.EncodeToString(rank)
		}
	}

	// The serving order, by hand: each round by rank (as lower-case hex of
	// equal length, string order is byte order), rounds in order.
	byHand := slices.Clone(ex.Tickets)
	slices.SortStableFunc(byHand, func(a, b exampleTicket) int {
		if a.Round != b.Round {
			return a.Round - b.Round
		}
		if a.Rank != b.Rank {
			if a.Rank < b.Rank {
				return -1
			}
			return 1
		}
		return int(a.Arrival - b.Arrival)
	})
	order, err := draw.OrderRounds(seed, in.Item, rounds, entries)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range order {
		if e.Arrival != byHand[i].Arrival {
			t.Fatalf("place %d: OrderRounds serves arrival %d, by hand %d", i+1, e.Arrival, byHand[i].Arrival)
		}
		ex.Order = append(ex.Order, examplePlace{Position: i + 1, Arrival: e.Arrival, Ticket: e.Ticket})
	}

	// The inclusion proof of arrival 2 (leaf 1 of round 0's 3): its
	// sibling leaf 0, then the subtree of leaf 2.
	proof, err := draw.InclusionProof(entries[0:3], 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{hex.EncodeToString(leafs[0]), hex.EncodeToString(leafs[2])}; !slices.Equal(proof, want) {
		t.Fatalf("proof %v, by hand %v", proof, want)
	}
	if err := draw.VerifyInclusion(rounds[0].Root, entries[1], 1, 3, proof); err != nil {
		t.Fatal(err)
	}
	ex.Proof = exampleProof{Round: 0, Arrival: 2, Index: 1, Size: 3, Root: rounds[0].Root, Proof: proof}

	// The receipt, by hand.
	priv := ed25519.NewKeyFromSeed(keySeed)
	pub := priv.Public().(ed25519.PublicKey)
	rcEntry := entries[in.Receipt.Arrival-1]
	payload := slices.Concat(be64(in.Item), hashes[in.Receipt.Arrival-1], be64(in.Receipt.Arrival), be64(in.Receipt.TakenAtMs))
	message := slices.Concat([]byte("flashsale/receipt/v1"), payload)
	sig := ed25519.Sign(priv, message)
	handString := "r1." + base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(sig)
	rc := draw.Receipt{Item: in.Item, Ticket: rcEntry.Ticket, Arrival: rcEntry.Arrival, TakenAt: takenAt}
	s, err := draw.SignReceipt(priv, rc)
	if err != nil {
		t.Fatal(err)
	}
	if s != handString {
		t.Fatalf("receipt %s, by hand %s", s, handString)
	}
	if got, err := draw.VerifyReceipt(pub, s); err != nil || got != rc {
		t.Fatalf("VerifyReceipt: %+v, %v", got, err)
	}
	kid := sha256.Sum256(pub)
	if draw.KeyID(pub) != hex.EncodeToString(kid[:8]) {
		t.Fatalf("KeyID %s", draw.KeyID(pub))
	}
	ex.Receipt = exampleReceipt{PublicKey: hex.EncodeToString(pub), KeyID: draw.KeyID(pub), Payload: hex.EncodeToString(payload),
		Message: hex.EncodeToString(message), Signature: hex.EncodeToString(sig), String: s}

	// The transcript, which must verify.
	unrevealed := slices.Clone(rounds)
	for i := range unrevealed {
		unrevealed[i].Seed = ""
	}
	tr, err := draw.NewRoundTranscript(in.Item, seed, unrevealed, entries)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tr.Rounds, rounds) || !slices.Equal(tr.Tickets, order) {
		t.Fatalf("transcript %+v", tr)
	}
	if err := draw.VerifyRounds(tr); err != nil {
		t.Fatal(err)
	}
	ex.Transcript = tr

	got, err := json.MarshalIndent(ex, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.MkdirAll(filepath.Dir(examplePath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(examplePath, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", examplePath)
		return
	}
	want, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatalf("%v (generate it with -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from what the code computes (byte %d); if the scheme changed on purpose, rerun with -update and update docs/fairness.md\ncomputed:\n%s",
			examplePath, firstDiff(got, want), got)
	}
	// And the file's transcript, read as a buyer would, verifies.
	var file example
	if err := json.Unmarshal(want, &file); err != nil {
		t.Fatal(err)
	}
	if err := draw.VerifyRounds(file.Transcript); err != nil {
		t.Fatalf("the golden transcript: %v", err)
	}
	p, err := draw.OwnPositionRounds(file.Transcript, in.Tickets[1].ID, 2)
	if err != nil || !slices.Equal(p.Proof, file.Proof.Proof) {
		t.Fatalf("the buyer of arrival 2: %+v, %v", p, err)
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func be64(v int64) []byte  { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
func be16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }
