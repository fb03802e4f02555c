//go:build !purego

#include "textflag.h"

// func dot4x3AVX2(c *[12]float32, a *float32, lda int, w *float32, ldw int, k int)
//
// c[3r+j] = Σₓ a[r·lda+x]·w[j·ldw+x] for r < 4, j < 3, x < k; k is a
// multiple of 8.
// Y0..Y11 accumulate c (index 3r+j), Y12..Y14 hold eight values of each w
// row, Y15 of the a row being multiplied.
TEXT ·dot4x3AVX2(SB), NOSPLIT, $0-48
	MOVQ c+0(FP), AX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	MOVQ w+24(FP), DI
	MOVQ ldw+32(FP), R10
	MOVQ k+40(FP), CX
	SHLQ $2, R8             // a's row stride in bytes
	LEAQ (R8)(R8*2), R9     // three rows of a
	SHLQ $2, R10            // w's row stride in bytes
	SHRQ $3, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

loop:
	VMOVUPS (DI), Y12
	VMOVUPS (DI)(R10*1), Y13
	VMOVUPS (DI)(R10*2), Y14
	VMOVUPS (SI), Y15
	VFMADD231PS Y12, Y15, Y0
	VFMADD231PS Y13, Y15, Y1
	VFMADD231PS Y14, Y15, Y2
	VMOVUPS (SI)(R8*1), Y15
	VFMADD231PS Y12, Y15, Y3
	VFMADD231PS Y13, Y15, Y4
	VFMADD231PS Y14, Y15, Y5
	VMOVUPS (SI)(R8*2), Y15
	VFMADD231PS Y12, Y15, Y6
	VFMADD231PS Y13, Y15, Y7
	VFMADD231PS Y14, Y15, Y8
	VMOVUPS (SI)(R9*1), Y15
	VFMADD231PS Y12, Y15, Y9
	VFMADD231PS Y13, Y15, Y10
	VFMADD231PS Y14, Y15, Y11
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  loop

	// Horizontal sums, four accumulators into one X register each.
	VHADDPS Y1, Y0, Y0
	VHADDPS Y3, Y2, Y2
	VHADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVUPS X0, (AX)
	VHADDPS Y5, Y4, Y4
	VHADDPS Y7, Y6, Y6
	VHADDPS Y6, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VADDPS X5, X4, X4
	VMOVUPS X4, 16(AX)
	VHADDPS Y9, Y8, Y8
	VHADDPS Y11, Y10, Y10
	VHADDPS Y10, Y8, Y8
	VEXTRACTF128 $1, Y8, X9
	VADDPS X9, X8, X8
	VMOVUPS X8, 32(AX)
	VZEROUPPER
	RET

// func dot4x1AVX2(c *[4]float32, a *float32, lda int, w *float32, k int)
//
// c[r] = Σₓ a[r·lda+x]·w[x] for r < 4, x < k; k is a multiple of 8.
TEXT ·dot4x1AVX2(SB), NOSPLIT, $0-40
	MOVQ c+0(FP), AX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	MOVQ w+24(FP), DI
	MOVQ k+32(FP), CX
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9
	SHRQ $3, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

loop1:
	VMOVUPS (DI), Y12
	VFMADD231PS (SI), Y12, Y0
	VFMADD231PS (SI)(R8*1), Y12, Y1
	VFMADD231PS (SI)(R8*2), Y12, Y2
	VFMADD231PS (SI)(R9*1), Y12, Y3
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  loop1

	VHADDPS Y1, Y0, Y0
	VHADDPS Y3, Y2, Y2
	VHADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVUPS X0, (AX)
	VZEROUPPER
	RET
