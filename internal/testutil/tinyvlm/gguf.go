package tinyvlm

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
)

// GGUF version 3, as llama.cpp and Ollama read it: a header, typed
// key/values, tensor infos, then the tensor data, each tensor aligned.
const (
	ggufMagic   = "GGUF"
	ggufVersion = 3
	// alignment is GGUF's default (general.alignment absent).
	alignment = 32
)

// GGUF value types.
const (
	typeUint32  uint32 = 4
	typeInt32   uint32 = 5
	typeFloat32 uint32 = 6
	typeBool    uint32 = 7
	typeString  uint32 = 8
	typeArray   uint32 = 9
)

// ggml tensor types.
const (
	tensorF32 uint32 = 0
	tensorF16 uint32 = 1
)

// kv is one metadata entry; value is uint32, int32, float32, bool, string,
// []string, []float32 or []int32.
type kv struct {
	key   string
	value any
}

// tensor is one tensor: dims in GGUF's order (fastest first) and its data,
// F32 or F16 by which slice is set.
type tensor struct {
	name string
	dims []uint64
	f32  []float32
	f16  []uint16
}

func (t tensor) typ() uint32 {
	if t.f16 != nil {
		return tensorF16
	}
	return tensorF32
}

func (t tensor) size() uint64 {
	if t.f16 != nil {
		return uint64(len(t.f16)) * 2
	}
	return uint64(len(t.f32)) * 4
}

func pad(n uint64) uint64 { return (n + alignment - 1) / alignment * alignment }

// writeFile writes a GGUF file at path, whole or not at all: a test that
// fails half-way leaves no file an engine could half-read.
func writeFile(path string, kvs []kv, tensors []tensor) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	w := bufio.NewWriter(f)
	err = write(w, kvs, tensors)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("gguf: write %s: %w", path, err)
	}
	return nil
}

// ew writes little-endian values and keeps the first error and the offset.
type ew struct {
	w   io.Writer
	n   uint64
	err error
}

func (e *ew) raw(b []byte) {
	if e.err != nil {
		return
	}
	n, err := e.w.Write(b)
	e.n += uint64(n)
	e.err = err
}

func (e *ew) u32(v uint32) { e.raw(binary.LittleEndian.AppendUint32(nil, v)) }
func (e *ew) u64(v uint64) { e.raw(binary.LittleEndian.AppendUint64(nil, v)) }
func (e *ew) str(s string) { e.u64(uint64(len(s))); e.raw([]byte(s)) }

func (e *ew) value(v any) error {
	switch x := v.(type) {
	case uint32:
		e.u32(typeUint32)
		e.u32(x)
	case int32:
		e.u32(typeInt32)
		e.u32(uint32(x))
	case float32:
		e.u32(typeFloat32)
		e.u32(math.Float32bits(x))
	case bool:
		e.u32(typeBool)
		if x {
			e.raw([]byte{1})
		} else {
			e.raw([]byte{0})
		}
	case string:
		e.u32(typeString)
		e.str(x)
	case []string:
		e.u32(typeArray)
		e.u32(typeString)
		e.u64(uint64(len(x)))
		for _, s := range x {
			e.str(s)
		}
	case []float32:
		e.u32(typeArray)
		e.u32(typeFloat32)
		e.u64(uint64(len(x)))
		for _, f := range x {
			e.u32(math.Float32bits(f))
		}
	case []int32:
		e.u32(typeArray)
		e.u32(typeInt32)
		e.u64(uint64(len(x)))
		for _, i := range x {
			e.u32(uint32(i))
		}
	default:
		return fmt.Errorf("value of type %T is not written by this writer", v)
	}
	return nil
}

func write(w io.Writer, kvs []kv, tensors []tensor) error {
	e := &ew{w: w}
	e.raw([]byte(ggufMagic))
	e.u32(ggufVersion)
	e.u64(uint64(len(tensors)))
	e.u64(uint64(len(kvs)))
	for _, m := range kvs {
		e.str(m.key)
		if err := e.value(m.value); err != nil {
			return fmt.Errorf("key %s: %w", m.key, err)
		}
	}
	var off uint64
	for _, t := range tensors {
		n := uint64(1)
		for _, d := range t.dims {
			n *= d
		}
		if got := t.size() / map[uint32]uint64{tensorF32: 4, tensorF16: 2}[t.typ()]; got != n {
			return fmt.Errorf("tensor %s: %d values for dims %v (%d)", t.name, got, t.dims, n)
		}
		e.str(t.name)
		e.u32(uint32(len(t.dims)))
		for _, d := range t.dims {
			e.u64(d)
		}
		e.u32(t.typ())
		e.u64(off)
		off = pad(off + t.size())
	}
	e.raw(make([]byte, pad(e.n)-e.n))
	for _, t := range tensors {
		start := e.n
		buf := make([]byte, 0, t.size())
		if t.f16 != nil {
			for _, h := range t.f16 {
				buf = binary.LittleEndian.AppendUint16(buf, h)
			}
		} else {
			for _, f := range t.f32 {
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(f))
			}
		}
		e.raw(buf)
		e.raw(make([]byte, pad(e.n-start)-(e.n-start)))
	}
	return e.err
}

// f16 converts a float32 to IEEE half precision, rounding to nearest even;
// the weights here are small and finite, so subnormals flush to zero.
func f16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case exp <= 0:
		return sign
	case exp >= 0x1f:
		return sign | 0x7c00
	}
	h := uint32(exp)<<10 | mant>>13
	rest := mant & 0x1fff
	if rest > 0x1000 || (rest == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, which is the right rounding
	}
	return sign | uint16(h)
}
