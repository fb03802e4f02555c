//go:build !purego

package encoder

import "golang.org/x/sys/cpu"

// bestKernel returns the fastest kernel the processor (and the operating
// system, which must save the wider registers) runs.
func bestKernel() useKernel {
	switch {
	case cpu.X86.HasAVX512F:
		return kernelAVX512
	case cpu.X86.HasAVX2 && cpu.X86.HasFMA:
		return kernelAVX2
	}
	return kernelGo
}

// gemmAsm is gemm on the assembly kernels: blocks of rows by one, two or
// four panels, the rows of a column block shared out evenly among the
// fewest blocks the kernels allow.
func gemmAsm(c []float32, ldc int, a []float32, lda, n int, b *usePanels, p0, p1 int, bias, add []float32, ldadd int, relu bool) {
	k := b.k
	args := gemmArgs{lda: 4 * lda, bs: 4 * usePanel * k, k: k, ldc: 4 * ldc, ldadd: 4 * ldadd}
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
		args.b = &b.data[p*usePanel*k]
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
			if useKern == kernelAVX512 {
				gemmKernelAVX512(np, rows, &args)
			} else {
				gemmKernelAVX2(np, rows, &args)
			}
			i += rows
		}
		p += np
	}
}
