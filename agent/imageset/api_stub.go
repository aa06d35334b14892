// Package imageset holds the sixteen pictures of the method, scaled and
// JPEG-encoded once per size. STUB: the owner replaces this file.
package imageset

import "errors"

// Set is a fixed, ordered set of pictures.
type Set struct{}

// Builtin returns the default sixteen pictures shipped in the binary.
func Builtin() (*Set, error) { return nil, errors.New("imageset: not implemented") }

// FromDir loads the user's own camera snapshots (JPEG/PNG) from dir.
func FromDir(dir string) (*Set, error) { return nil, errors.New("imageset: not implemented") }

func (s *Set) Name() string { return "" }
func (s *Set) Hash() string { return "" }
func (s *Set) Len() int     { return 0 }

// DataURL returns picture i (mod Len) at the named size as a base64 JPEG data URL.
func (s *Set) DataURL(size string, i int) (string, error) { return "", errors.New("not implemented") }

// UniqueDataURLs returns n data URLs at size whose pixels differ from each
// other and from the plain set, cycling the pictures from index start.
func (s *Set) UniqueDataURLs(size string, start, n int, seed uint64) ([]string, error) {
	return nil, errors.New("not implemented")
}
