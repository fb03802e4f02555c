//go:build !amd64 || purego

package encoder

// bestKernel returns the portable kernel: this build has no other.
func bestKernel() useKernel { return kernelGo }

// gemmAsm is never called: useKern is always kernelGo.
func gemmAsm(c []float32, ldc int, a []float32, lda, n int, b *usePanels, p0, p1 int, bias, add []float32, ldadd int, relu bool) {
	panic("encoder: no assembly kernels in this build")
}

func softmaxAsm(row []float32, n int, scale float32) bool { return false }

func layerNormAsm(dst, x, g, b []float32, eps float32) bool { return false }

// gemmQBlock and gemmQAsm are never called: useKern is always kernelGo.
func gemmQBlock(n, left int) (np, maxRows int) { return 1, 6 }

func gemmQAsm(np, rows int, p *gemmQArgs) {
	panic("encoder: no assembly kernels in this build")
}

func rowStatsAsm(row []float32) (mx, ss float32, ok bool) { return 0, 0, false }

func quantizeRowAsm(q []int16, row []float32, s float32) bool { return false }
