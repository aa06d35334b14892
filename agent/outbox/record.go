package outbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// A record is one spooled message, in a file of its own:
//
//	magic "VOB1" | u16 subject length | u16 msg id length | u32 data length |
//	subject | msg id | data | u32 CRC-32C of everything before it
//
// Big-endian. The checksum covers the lengths too, so a file cut short, or
// one whose bytes a disk changed, is told from a whole one instead of
// being published as something else.
type record struct {
	subject string
	msgID   string
	data    []byte
}

const (
	recordMagic  = "VOB1"
	recordHeader = len(recordMagic) + 2 + 2 + 4
	recordTrail  = 4
	// maxData bounds a record's data: far above NATS's largest payload
	// (64 MiB), so a length field that a corruption made huge is refused
	// before anything is allocated for it.
	maxData = 256 << 20
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// errTorn is a record shorter than its header says: a write that did not
// finish.
var errTorn = errors.New("torn record: the file ends before the record does")

func encodeRecord(r record) ([]byte, error) {
	switch {
	case r.subject == "" || len(r.subject) > 0xffff:
		return nil, fmt.Errorf("subject of %d bytes: want 1 to 65535", len(r.subject))
	case r.msgID == "" || len(r.msgID) > 0xffff:
		return nil, fmt.Errorf("msg id of %d bytes: want 1 to 65535", len(r.msgID))
	case len(r.data) > maxData:
		return nil, fmt.Errorf("message of %d bytes: want at most %d", len(r.data), maxData)
	}
	b := make([]byte, 0, recordHeader+len(r.subject)+len(r.msgID)+len(r.data)+recordTrail)
	b = append(b, recordMagic...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(r.subject)))
	b = binary.BigEndian.AppendUint16(b, uint16(len(r.msgID)))
	b = binary.BigEndian.AppendUint32(b, uint32(len(r.data)))
	b = append(b, r.subject...)
	b = append(b, r.msgID...)
	b = append(b, r.data...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crcTable)), nil
}

// decodeRecord reads one record file. It never panics: anything but a
// whole record is an error (errTorn for one cut short).
func decodeRecord(b []byte) (record, error) {
	if len(b) < recordHeader {
		if len(b) < len(recordMagic) && string(b) == recordMagic[:len(b)] {
			return record{}, errTorn
		}
		if len(b) >= len(recordMagic) && string(b[:len(recordMagic)]) == recordMagic {
			return record{}, errTorn
		}
		return record{}, fmt.Errorf("not a spooled message: %d bytes without the %q header", len(b), recordMagic)
	}
	if string(b[:len(recordMagic)]) != recordMagic {
		return record{}, fmt.Errorf("not a spooled message: it begins %q, want %q", b[:len(recordMagic)], recordMagic)
	}
	ns := int(binary.BigEndian.Uint16(b[4:]))
	ni := int(binary.BigEndian.Uint16(b[6:]))
	nd := int(binary.BigEndian.Uint32(b[8:]))
	if ns == 0 || ni == 0 {
		return record{}, fmt.Errorf("corrupt record: empty subject or msg id")
	}
	if nd > maxData {
		return record{}, fmt.Errorf("corrupt record: data of %d bytes, want at most %d", nd, maxData)
	}
	total := recordHeader + ns + ni + nd + recordTrail
	if len(b) < total {
		return record{}, errTorn
	}
	if len(b) > total {
		return record{}, fmt.Errorf("corrupt record: %d bytes after its end", len(b)-total)
	}
	body := b[:total-recordTrail]
	if got, want := crc32.Checksum(body, crcTable), binary.BigEndian.Uint32(b[total-recordTrail:]); got != want {
		return record{}, fmt.Errorf("corrupt record: checksum %08x, want %08x", got, want)
	}
	p := b[recordHeader:]
	r := record{subject: string(p[:ns]), msgID: string(p[ns : ns+ni])}
	r.data = append([]byte(nil), p[ns+ni:ns+ni+nd]...)
	return r, nil
}
