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
// system, which must save the wider registers) runs. Both need AVX2, FMA
// and F16C (softmax, layer norm and the AVX2 kernels are VEX-coded, and the
// AVX2 kernels widen float16); the AVX-512 kernels use AVX-512 F only.
var bestKernel = sync.OnceValue(func() useKernel {
	if !cpu.X86.HasAVX2 || !cpu.X86.HasFMA || !hasF16C() {
		return kernelGo
	}
	if cpu.X86.HasAVX512F {
		return kernelAVX512
	}
	return kernelAVX2
})

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
		if useKern == kernelAVX512 {
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
			case useKern == kernelAVX512 && half:
				gemmKernelAVX512Half(np, rows, &args)
			case useKern == kernelAVX512:
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

// gemmQAsm runs the AVX2 int16 kernel on a block of 1 to 6 rows.
func gemmQAsm(rows int, p *gemmQArgs) { gemmKernelAVX2Q(rows, p) }
