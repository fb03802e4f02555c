//go:build !purego

#include "textflag.h"

// func dotInt16AVX2(a *int16, q *float32, n int) float32
// Σ a[i]·q[i] for n a positive multiple of 32: the int16 codes are widened
// to int32, converted to float32 and multiplied into four accumulators.
TEXT ·dotInt16AVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

loop:
	VPMOVSXWD (SI), Y4
	VPMOVSXWD 16(SI), Y5
	VPMOVSXWD 32(SI), Y6
	VPMOVSXWD 48(SI), Y7
	VCVTDQ2PS Y4, Y4
	VCVTDQ2PS Y5, Y5
	VCVTDQ2PS Y6, Y6
	VCVTDQ2PS Y7, Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ $64, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JNZ  loop

	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET
