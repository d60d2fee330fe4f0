package oci

import (
	"debug/elf"
	"fmt"
)

// CheckStatic fails unless the file at p is a linux/amd64 ELF executable without a program
// interpreter: the images have no libc and no dynamic loader, so nothing else runs there.
func CheckStatic(p string) error {
	f, err := elf.Open(p)
	if err != nil {
		return fmt.Errorf("reading %s as an ELF executable: %w", p, err)
	}
	defer func() { _ = f.Close() }()
	if f.Machine != elf.EM_X86_64 {
		return fmt.Errorf("%s is built for %s, and the images are linux/amd64", p, f.Machine)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked, and the images have no libc: build it with CGO_ENABLED=0", p)
		}
	}
	return nil
}
