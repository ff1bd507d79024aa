package main

// Event-to-read lag of the pod watch, measured on the socket.
//
// The stand-in counts the bytes it writes on every connection (TLS records included).
// After a batch of pod events is flushed, each event of the batch is queued with the
// connection's byte count at that point. A sampler then asks the kernel (sock_diag
// netlink, one exact-socket query) for the client side of that connection: the bytes
// its TCP stack received (tcp_info.tcpi_bytes_received) minus those still waiting in
// its receive queue are the bytes the client has read. An event whose last byte has been
// read has been handed to the client's parser: nodewarden's watch thread reads, decrypts,
// parses and applies in one pass, so the figure is the event-to-cache lag up to the
// processing of one read (at most 16 KiB, two or three events). The sampler polls every
// 2 ms while events are outstanding, which bounds the resolution; each event gets an
// upper bound (the first sample that saw it read) and a lower bound (the sample before).
// This needs nothing from nodewarden, so it works at sizes where its /metrics page does not.

import (
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// countingConn counts the bytes written to a connection.
type countingConn struct {
	net.Conn
	written atomic.Int64
}

func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.written.Add(int64(n))
	return n, err
}

type countingListener struct{ net.Listener }

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c}, nil
}

type connKey struct{}

// lagRecord is one pod watch event's lag, unix ns.
type lagRecord struct {
	Created int64 `json:"created"`
	Hi      int64 `json:"hi"` // read by then
	Lo      int64 `json:"lo"` // not read yet then
}

type lagLog struct {
	mu      sync.Mutex
	recs    []lagRecord
	errors  int
	lastErr string
	pending atomic.Int64 // events written and not yet seen read
}

func (l *lagLog) add(r []lagRecord) {
	l.mu.Lock()
	l.recs = append(l.recs, r...)
	l.mu.Unlock()
}

func (l *lagLog) fail(err error) {
	l.mu.Lock()
	l.errors++
	l.lastErr = err.Error()
	l.mu.Unlock()
}

func (l *lagLog) since(from int) (int, []lagRecord, int, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if from < 0 {
		from = 0
	}
	if from > len(l.recs) {
		from = len(l.recs)
	}
	return len(l.recs), append([]lagRecord{}, l.recs[from:]...), l.errors, l.lastErr
}

type pendingEvent struct {
	created int64
	end     int64 // connection byte count once the event was written
}

// lagStream follows one pod watch connection.
type lagStream struct {
	log      *lagLog
	local    *net.TCPAddr // the stand-in's end
	remote   *net.TCPAddr // the client's end
	mu       sync.Mutex
	pending  []pendingEvent
	wake     chan struct{}
	done     chan struct{}
	lastPoll int64
}

func newLagStream(l *lagLog, c net.Conn) *lagStream {
	la, _ := c.LocalAddr().(*net.TCPAddr)
	ra, _ := c.RemoteAddr().(*net.TCPAddr)
	if la == nil || ra == nil || la.IP.To4() == nil || ra.IP.To4() == nil {
		return nil
	}
	s := &lagStream{log: l, local: la, remote: ra, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go s.run()
	return s
}

func (s *lagStream) add(created []int64, end int64) {
	s.mu.Lock()
	for _, c := range created {
		s.pending = append(s.pending, pendingEvent{c, end})
	}
	s.mu.Unlock()
	s.log.pending.Add(int64(len(created)))
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// close ends the stream: what it had not seen read will not be (the connection is gone).
func (s *lagStream) close() {
	close(s.done)
	s.mu.Lock()
	s.log.pending.Add(int64(-len(s.pending)))
	s.pending = nil
	s.mu.Unlock()
}

func (s *lagStream) run() {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 4 /* NETLINK_SOCK_DIAG */)
	if err != nil {
		s.log.fail(err)
		return
	}
	defer syscall.Close(fd)
	tv := syscall.Timeval{Sec: 1}
	_ = syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
	prev := time.Now().UnixNano()
	for {
		s.mu.Lock()
		n := len(s.pending)
		s.mu.Unlock()
		if n == 0 {
			select {
			case <-s.wake:
				prev = time.Now().UnixNano()
			case <-s.done:
				return
			}
			continue
		}
		now := time.Now().UnixNano()
		read, err := clientRead(fd, s.remote, s.local)
		if err != nil {
			s.log.fail(err)
			select {
			case <-s.done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		var out []lagRecord
		s.mu.Lock()
		k := 0
		for k < len(s.pending) && s.pending[k].end <= read {
			out = append(out, lagRecord{Created: s.pending[k].created, Hi: now, Lo: prev})
			k++
		}
		s.pending = s.pending[k:]
		s.mu.Unlock()
		s.log.pending.Add(int64(-k))
		if len(out) > 0 {
			s.log.add(out)
		}
		prev = now
		select {
		case <-s.done:
			return
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// clientRead asks the kernel how many bytes the socket (src -> dst, the client's side)
// has read: tcpi_bytes_received minus its receive queue.
func clientRead(fd int, src, dst *net.TCPAddr) (int64, error) {
	req := make([]byte, 72)
	binary.LittleEndian.PutUint32(req[0:], 72)
	binary.LittleEndian.PutUint16(req[4:], 20) // SOCK_DIAG_BY_FAMILY
	binary.LittleEndian.PutUint16(req[6:], 1)  // NLM_F_REQUEST: one socket, exact match
	r := req[16:]
	r[0], r[1], r[2] = syscall.AF_INET, syscall.IPPROTO_TCP, 1<<(2-1) // INET_DIAG_INFO
	binary.LittleEndian.PutUint32(r[4:], 0xffffffff)                  // any state
	id := r[8:]
	binary.BigEndian.PutUint16(id[0:], uint16(src.Port))
	binary.BigEndian.PutUint16(id[2:], uint16(dst.Port))
	copy(id[4:8], src.IP.To4())
	copy(id[20:24], dst.IP.To4())
	binary.LittleEndian.PutUint32(id[40:], 0xffffffff) // INET_DIAG_NOCOOKIE
	binary.LittleEndian.PutUint32(id[44:], 0xffffffff)
	if err := syscall.Sendto(fd, req, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return 0, err
	}
	buf := make([]byte, 8192)
	n, _, err := syscall.Recvfrom(fd, buf, 0)
	if err != nil {
		return 0, err
	}
	buf = buf[:n]
	if len(buf) < 16 {
		return 0, syscall.EINVAL
	}
	if typ := binary.LittleEndian.Uint16(buf[4:]); typ == syscall.NLMSG_ERROR {
		if len(buf) >= 20 {
			if e := int32(binary.LittleEndian.Uint32(buf[16:])); e != 0 {
				return 0, syscall.Errno(-e)
			}
		}
		return 0, syscall.EINVAL
	}
	msg := buf[16:]
	if len(msg) < 72 {
		return 0, syscall.EINVAL
	}
	rqueue := int64(binary.LittleEndian.Uint32(msg[56:]))
	for a := msg[72:]; len(a) >= 4; {
		l := int(binary.LittleEndian.Uint16(a[0:]))
		if l < 4 || l > len(a) {
			break
		}
		if binary.LittleEndian.Uint16(a[2:]) == 2 && l >= 4+136 { // INET_DIAG_INFO: struct tcp_info
			received := int64(binary.LittleEndian.Uint64(a[4+128:]))
			return received - rqueue, nil
		}
		a = a[(l+3)&^3:]
	}
	return 0, syscall.ENODATA
}
