// Package nemesis builds a small test network out of Linux network
// namespaces and injects network faults into it: partitions between chosen
// hosts, delay with jitter, and packet loss. It is test support for the
// fault suite (faults/netfaults_test.go) and is never linked into a
// deployable.
//
// A Network is a bridge in the root namespace with the first address of a
// private /24; each Host is a network namespace joined to the bridge by a
// veth pair, with an address of its own. A process started with
// Host.Command sees only the host's interfaces, so a server started there
// listens on the host's address, and the root namespace (the test) reaches
// every host through the bridge.
//
// Faults act inside one host's namespace, on its own traffic only:
//
//   - Partition(a, bs): nftables drop rules in a's namespace for packets to
//     and from each b (both directions of every a–b link; a and the others
//     keep talking to everyone else). Connections are not reset: packets
//     vanish, as in a real partition.
//   - Delay(h, delay, jitter): every packet h sends is held for delay ±
//     jitter (uniform) before it leaves, so the round trip of any
//     conversation with h grows by about delay. The kernel this was built
//     on has no tc netem, so the packets are queued to user space (iptables
//     NFQUEUE; nftables' own queue expression is missing too) and released
//     by this package in order (no reordering).
//   - Loss(h, fraction): nftables drops that fraction of the packets h sends
//     (numgen random), so TCP retransmits.
//
// Every fault is bounded: it heals itself after its duration with
// time.AfterFunc, whatever the test goroutine is doing, and Heal or Close
// heal it sooner. Close (registered with t.Cleanup by New) heals every
// fault, kills every process still inside a host, and deletes the
// namespaces, veths and bridge. New first removes what a killed earlier run
// of the same network name left behind.
//
// It needs root, ip (iproute2), nft (nftables) and iptables (for Delay's
// NFQUEUE); deploy/local/stack.sh installs them.
//
// Only the fault suite's tests import it (faults/hosts_test.go builds the test
// bed on it). It imports no other package of the module: it knows hosts and
// packets, not flashsale.
package nemesis
