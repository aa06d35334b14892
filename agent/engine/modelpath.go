package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// hubID matches a Hugging Face repository id ("Qwen/Qwen3-VL-4B-Instruct"),
// which vLLM downloads into its own cache rather than reading from a path.
var hubID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$`)

// resolveModelPath confines a model file or directory to the model roots.
// An absolute path must lie inside a root once symlinks are evaluated (where
// the file exists); a relative one is looked up under each root in turn and
// may not climb out with "..". With allowHub, a relative name found under no
// root that looks like a hub id is returned as it is.
// It returns the cleaned path to hand to the engine.
func resolveModelPath(field, p string, roots []string, allowHub bool) (string, error) {
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("%s: contains a NUL byte", field)
	}
	realRoots, err := evalRoots(roots)
	if err != nil {
		return "", err
	}
	if filepath.IsAbs(p) {
		if len(realRoots) == 0 {
			return "", fmt.Errorf("%s: %q: no model roots are configured, so no model file may be used; add its directory to model_roots", field, p)
		}
		clean := filepath.Clean(p)
		if err := confined(field, clean, realRoots); err != nil {
			return "", err
		}
		return clean, nil
	}
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		if part == ".." {
			return "", fmt.Errorf("%s: %q climbs out with \"..\"; name a path inside a model root", field, p)
		}
	}
	for _, root := range realRoots {
		cand := filepath.Join(root, p)
		if _, err := os.Lstat(cand); err != nil {
			continue
		}
		if err := confined(field, cand, realRoots); err != nil {
			return "", err
		}
		return cand, nil
	}
	if allowHub && hubID.MatchString(p) {
		return p, nil
	}
	if len(realRoots) == 0 {
		return "", fmt.Errorf("%s: %q: no model roots are configured to look it up in", field, p)
	}
	return "", fmt.Errorf("%s: %q is not found under any model root (%s)", field, p, strings.Join(realRoots, ", "))
}

// evalRoots resolves each root's own symlinks so that a root reached through
// a link (/models -> /mnt/nvme/models) still contains its files.
func evalRoots(roots []string) ([]string, error) {
	var out []string
	for i, r := range roots {
		if r == "" || !filepath.IsAbs(r) {
			return nil, fmt.Errorf("model_roots[%d]: %q is not an absolute path", i, r)
		}
		real, err := filepath.EvalSymlinks(filepath.Clean(r))
		if err != nil {
			real = filepath.Clean(r)
		}
		out = append(out, real)
	}
	return out, nil
}

// confined checks that path, with every symlink that exists evaluated, lies
// inside one of roots.
func confined(field, path string, roots []string) error {
	real, err := evalExisting(path)
	if err != nil {
		return fmt.Errorf("%s: %q: %w", field, path, err)
	}
	for _, root := range roots {
		rel, err := filepath.Rel(root, real)
		if err != nil {
			continue
		}
		if rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
			return nil
		}
	}
	if real != path {
		return fmt.Errorf("%s: %q resolves to %q, outside the model roots (%s)", field, path, real, strings.Join(roots, ", "))
	}
	return fmt.Errorf("%s: %q is outside the model roots (%s)", field, path, strings.Join(roots, ", "))
}

// evalExisting evaluates the symlinks of the longest existing prefix of
// path; the missing rest cannot hold links.
func evalExisting(path string) (string, error) {
	rest := ""
	cur := path
	for {
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if fi, lerr := os.Lstat(cur); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return "", fmt.Errorf("%q is a symlink whose target does not exist", cur)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return path, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}
