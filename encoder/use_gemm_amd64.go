//go:build !purego

package encoder

import (
	"sync"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// hasF16C reports whether the processor converts float16 (CPUID leaf 1,
// ECX bit 29), which golang.org/x/sys/cpu does not tell.
func hasF16C() bool

// bestKernel returns the fastest kernel the processor (and the operating
// system, which must save the wider registers) runs. All need AVX2, FMA
// and F16C (softmax, layer norm and the AVX2 kernels are VEX-coded, and the
// AVX2 kernels widen float16); the AVX-512 float kernels use AVX-512 F
// only, the int16 ones BW (VPMADDWD on ZMM) and VNNI (VPDPWSSD).
var bestKernel = sync.OnceValue(func() useKernel {
	if !cpu.X86.HasAVX2 || !cpu.X86.HasFMA || !hasF16C() {
		return kernelGo
	}
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VNNI {
		return kernelAVX512VNNI
	}
	if cpu.X86.HasAVX512F {
		return kernelAVX512
	}
	return kernelAVX2
})

// hasAVX512BW tells whether kernelAVX512 has its int16 kernels (else it
// runs the AVX2 ones: AVX-512 F without BW, the Xeon Phi's).
var hasAVX512BW = cpu.X86.HasAVX512BW

// gemmAsm is gemm on the assembly kernels: blocks of rows by one, two or
// four panels, the rows of a column block shared out evenly among the
// fewest blocks the kernels allow.
func gemmAsm(c []float32, ldc int, a []float32, lda, n int, b *usePanels, p0, p1 int, bias, add []float32, ldadd int, relu bool) {
	k := b.k
	half := b.half != nil
	args := gemmArgs{lda: 4 * lda, bs: 4 * usePanel * k, k: k, ldc: 4 * ldc, ldadd: 4 * ldadd}
	if half {
		args.bs = 2 * usePanel * k
	}
	if relu {
		args.relu = 1
	}
	for p := p0; p < p1; {
		np, maxRows := 1, 6
		if useKern >= kernelAVX512 {
			switch left := p1 - p; {
			case n <= 6 && left >= 4:
				np, maxRows = 4, 6
			case left >= 2:
				np, maxRows = 2, 12
			default:
				np, maxRows = 1, 12
			}
		}
		col := p * usePanel
		if half {
			args.b = unsafe.Pointer(&b.half[p*usePanel*k])
		} else {
			args.b = unsafe.Pointer(&b.data[p*usePanel*k])
		}
		args.bias = nil
		if bias != nil {
			args.bias = &bias[col]
		}
		blocks := (n + maxRows - 1) / maxRows
		for i := 0; i < n; blocks-- {
			rows := (n - i + blocks - 1) / blocks
			args.a = &a[i*lda]
			args.c = &c[i*ldc+col]
			if add != nil {
				args.add = &add[i*ldadd+col]
			}
			switch {
			case useKern >= kernelAVX512 && half:
				gemmKernelAVX512Half(np, rows, &args)
			case useKern >= kernelAVX512:
				gemmKernelAVX512(np, rows, &args)
			case half:
				gemmKernelAVX2Half(np, rows, &args)
			default:
				gemmKernelAVX2(np, rows, &args)
			}
			i += rows
		}
		p += np
	}
}

// gemmQBlock returns the block shape of the int16 kernels of useKern for
// n rows and left panels: np panels (1, 2 or 4, at most left) of at most
// maxRows rows, as gemmAsm's.
func gemmQBlock(n, left int) (np, maxRows int) {
	if useKern < kernelAVX512 || useKern == kernelAVX512 && !hasAVX512BW {
		return 1, 6
	}
	switch {
	case n <= 6 && left >= 4:
		return 4, 6
	case left >= 2:
		return 2, 12
	}
	return 1, 12
}

// gemmQAsm runs the int16 kernel of useKern on a block of rows rows and np
// panels (a shape from gemmQBlock).
func gemmQAsm(np, rows int, p *gemmQArgs) {
	switch {
	case useKern == kernelAVX512VNNI:
		gemmKernelAVX512VNNI(np, rows, p)
	case useKern == kernelAVX512 && hasAVX512BW:
		gemmKernelAVX512Q(np, rows, p)
	default:
		gemmKernelAVX2Q(np, rows, p)
	}
}
