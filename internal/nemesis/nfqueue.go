package nemesis

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// queue is a minimal netfilter queue reader (the NFQUEUE netlink protocol,
// linux/netfilter/nfnetlink_queue.h) that accepts each packet after a delay.
// The socket is opened inside the host's namespace (a queue belongs to a
// namespace) and stays there once the thread goes back.
type queue struct {
	fd     int
	num    uint16
	delay  time.Duration
	jitter time.Duration

	wmu        sync.Mutex // verdict writes
	release    chan held
	stop       chan struct{}
	readerDone chan struct{}
	wg         sync.WaitGroup
	closed     sync.Once
}

type held struct {
	id uint32
	at time.Time
}

const (
	nfnlSubsysQueue     = 3
	nfqnlMsgPacket      = 0
	nfqnlMsgVerdict     = 1
	nfqnlMsgConfig      = 2
	nfqaCfgCmd          = 1
	nfqaCfgParams       = 2
	nfqaCfgQueueMaxlen  = 3
	nfqnlCfgCmdBind     = 1
	nfqnlCfgCmdUnbind   = 2
	nfqnlCopyMeta       = 1
	nfqaPacketHdr       = 1
	nfqaVerdictHdr      = 2
	nfAccept            = 1
	queueMaxlen         = 1 << 16
	nlmsgHdrLen         = 16
	nfgenHdrLen         = 4
	netlinkRecvBufBytes = 8 << 20
)

// openQueue binds queue num in namespace ns and starts releasing its
// packets after delay ± jitter, in arrival order.
func openQueue(ns string, num uint16, delay, jitter time.Duration) (*queue, error) {
	fd, err := socketIn(ns)
	if err != nil {
		return nil, err
	}
	q := &queue{fd: fd, num: num, delay: delay, jitter: jitter, release: make(chan held, queueMaxlen),
		stop: make(chan struct{}), readerDone: make(chan struct{})}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, netlinkRecvBufBytes)
	// The reader wakes up every 100 ms to see whether it should stop.
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 100_000}); err != nil {
		unix.Close(fd)
		return nil, err
	}
	cmd := []byte{nfqnlCfgCmdBind, 0, 0, 0}
	params := make([]byte, 5)
	binary.BigEndian.PutUint32(params, 0xffff)
	params[4] = nfqnlCopyMeta
	maxlen := binary.BigEndian.AppendUint32(nil, queueMaxlen)
	for _, attrs := range [][]byte{attr(nfqaCfgCmd, cmd), append(attr(nfqaCfgParams, params), attr(nfqaCfgQueueMaxlen, maxlen)...)} {
		if err := q.request(nfqnlMsgConfig, attrs); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("nfqueue %d config: %w", num, err)
		}
	}
	q.wg.Add(2)
	go q.read()
	go q.releaser()
	return q, nil
}

// socketIn opens a netfilter netlink socket inside namespace ns.
func socketIn(ns string) (int, error) {
	fd := -1
	h := &Host{NS: ns}
	err := h.inside(func() (err error) {
		fd, err = unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
		return err
	})
	if err != nil {
		return -1, fmt.Errorf("netlink socket in %s: %w", ns, err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

func attr(typ uint16, payload []byte) []byte {
	n := 4 + len(payload)
	b := make([]byte, (n+3)&^3)
	binary.NativeEndian.PutUint16(b[0:], uint16(n))
	binary.NativeEndian.PutUint16(b[2:], typ)
	copy(b[4:], payload)
	return b
}

// message is a netlink message of the queue subsystem for this queue.
func (q *queue) message(typ uint16, flags uint16, attrs []byte) []byte {
	b := make([]byte, nlmsgHdrLen+nfgenHdrLen, nlmsgHdrLen+nfgenHdrLen+len(attrs))
	b = append(b, attrs...)
	binary.NativeEndian.PutUint32(b[0:], uint32(len(b)))
	binary.NativeEndian.PutUint16(b[4:], nfnlSubsysQueue<<8|typ)
	binary.NativeEndian.PutUint16(b[6:], flags)
	b[16] = unix.AF_UNSPEC
	b[17] = 0 // NFNETLINK_V0
	binary.BigEndian.PutUint16(b[18:], q.num)
	return b
}

// request sends a config message and waits for its ack (before the reader
// runs, so the next message on the socket is the ack).
func (q *queue) request(typ uint16, attrs []byte) error {
	msg := q.message(typ, unix.NLM_F_REQUEST|unix.NLM_F_ACK, attrs)
	if err := unix.Sendto(q.fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(q.fd, buf, 0)
	if err != nil {
		return err
	}
	if n < nlmsgHdrLen+4 || binary.NativeEndian.Uint16(buf[4:]) != unix.NLMSG_ERROR {
		return fmt.Errorf("unexpected netlink answer (%d bytes)", n)
	}
	if e := int32(binary.NativeEndian.Uint32(buf[nlmsgHdrLen:])); e != 0 {
		return unix.Errno(-e)
	}
	return nil
}

// read takes each queued packet's id and schedules its release.
func (q *queue) read() {
	defer q.wg.Done()
	defer close(q.readerDone)
	buf := make([]byte, 1<<16)
	var last time.Time
	for {
		n, _, err := unix.Recvfrom(q.fd, buf, 0)
		if err != nil {
			select {
			case <-q.stop:
				return
			default:
			}
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ENOBUFS) || errors.Is(err, unix.EAGAIN) {
				continue // ENOBUFS: the kernel dropped messages; EAGAIN: the receive timeout
			}
			return
		}
		now := time.Now()
		for b := buf[:n]; len(b) >= nlmsgHdrLen; {
			l := int(binary.NativeEndian.Uint32(b[0:]))
			if l < nlmsgHdrLen || l > len(b) {
				break
			}
			m := b[:l]
			b = b[(l+3)&^3:]
			if binary.NativeEndian.Uint16(m[4:]) != nfnlSubsysQueue<<8|nfqnlMsgPacket {
				continue
			}
			id, ok := packetID(m[nlmsgHdrLen+nfgenHdrLen:])
			if !ok {
				continue
			}
			at := now.Add(q.delay - q.jitter + time.Duration(rand.Int64N(int64(2*q.jitter)+1)))
			if at.Before(last) {
				at = last // in order: never before the packet sent earlier
			}
			last = at
			select {
			case q.release <- held{id: id, at: at}:
			case <-q.stop:
				return
			}
		}
	}
}

func packetID(attrs []byte) (uint32, bool) {
	for len(attrs) >= 4 {
		l := int(binary.NativeEndian.Uint16(attrs[0:]))
		typ := binary.NativeEndian.Uint16(attrs[2:]) & 0x3fff
		if l < 4 || l > len(attrs) {
			return 0, false
		}
		if typ == nfqaPacketHdr && l >= 8 {
			return binary.BigEndian.Uint32(attrs[4:]), true
		}
		attrs = attrs[(l+3)&^3:]
	}
	return 0, false
}

// releaser accepts each packet at its time; once stopped, every packet
// still held at once (after the reader has stopped handing it more).
func (q *queue) releaser() {
	defer q.wg.Done()
	for {
		select {
		case h := <-q.release:
			if d := time.Until(h.at); d > 0 {
				select {
				case <-time.After(d):
				case <-q.stop:
				}
			}
			q.verdict(h.id)
		case <-q.stop:
			<-q.readerDone
			for {
				select {
				case h := <-q.release:
					q.verdict(h.id)
				default:
					return
				}
			}
		}
	}
}

func (q *queue) verdict(id uint32) {
	v := make([]byte, 8)
	binary.BigEndian.PutUint32(v[0:], nfAccept)
	binary.BigEndian.PutUint32(v[4:], id)
	msg := q.message(nfqnlMsgVerdict, unix.NLM_F_REQUEST, attr(nfqaVerdictHdr, v))
	q.wmu.Lock()
	defer q.wmu.Unlock()
	_ = unix.Sendto(q.fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
}

// Close releases what is held, unbinds and closes the socket. The iptables
// rule must be gone first, or packets queued meanwhile are dropped.
func (q *queue) Close() {
	q.closed.Do(func() {
		close(q.stop)
		q.wg.Wait()
		_ = unix.Sendto(q.fd, q.message(nfqnlMsgConfig, unix.NLM_F_REQUEST, attr(nfqaCfgCmd, []byte{nfqnlCfgCmdUnbind, 0, 0, 0})), 0,
			&unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		unix.Close(q.fd)
	})
}
