package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// dropPageCache writes dirty pages back and then asks the kernel to drop
// the page cache, dentries and inodes ("3"). On a Jetson the page cache
// lives in the memory the GPU allocates from, and vLLM refuses to start when
// it finds less free memory than gpu_memory_utilization asks for (vllm
// issue #48140). The file is opened without O_CREATE so that a wrong
// SysRoot fails loudly instead of writing a stray file.
func dropPageCache(sysRoot string) error {
	syscall.Sync()
	path := filepath.Join(sysRoot, "proc", "sys", "vm", "drop_caches")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		if os.IsPermission(err) {
			return fmt.Errorf("%w (the agent must run as root to drop the page cache, or set drop_page_cache: false)", err)
		}
		return err
	}
	if _, err := f.WriteString("3"); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
