//go:build !purego

#include "textflag.h"

// SPLAT broadcasts the 32-bit constant c into the Y register r (clobbers
// AX and X0).
#define SPLAT(c, r) MOVL $c, AX; VMOVD AX, X0; VPBROADCASTD X0, r

// HMAX sets every lane of Y register r (not Y0) to the largest of its lanes.
#define HMAX(r) VPERM2F128 $1, r, r, Y0; VMAXPS Y0, r, r; VPERMILPS $0x4e, r, Y0; VMAXPS Y0, r, r; VPERMILPS $0xb1, r, Y0; VMAXPS Y0, r, r

// HSUM sets every lane of Y register r (not Y0) to the sum of its lanes.
#define HSUM(r) VPERM2F128 $1, r, r, Y0; VADDPS Y0, r, r; VPERMILPS $0x4e, r, Y0; VADDPS Y0, r, r; VPERMILPS $0xb1, r, Y0; VADDPS Y0, r, r

// func softmaxAVX2(row *float32, n int, scale float32)
//
// Replaces row[0..n) (n a positive multiple of 8) by softmax(row·scale):
// the exp of each value less the largest, by useExp32's method, over
// their sum. The frame holds the constants, eight copies each, as memory
// operands.
TEXT ·softmaxAVX2(SB), NOSPLIT, $384-20
	SPLAT(0xc2ae0000, Y1) // -87: below it, 2ⁿ would not be normal
	VMOVUPS Y1, 0(SP)
	SPLAT(0x3fb8aa3b, Y1) // log₂ e
	VMOVUPS Y1, 32(SP)
	SPLAT(0x3f318000, Y1) // ln 2, high part (0.693359375)
	VMOVUPS Y1, 64(SP)
	SPLAT(0xb95e8083, Y1) // ln 2, low part (-2.12194440e-4)
	VMOVUPS Y1, 96(SP)
	SPLAT(0x39506967, Y1) // polynomial: 1.9875691500e-4
	VMOVUPS Y1, 128(SP)
	SPLAT(0x3ab743ce, Y1) // 1.3981999507e-3
	VMOVUPS Y1, 160(SP)
	SPLAT(0x3c088908, Y1) // 8.3334519073e-3
	VMOVUPS Y1, 192(SP)
	SPLAT(0x3d2aa9c1, Y1) // 4.1665795894e-2
	VMOVUPS Y1, 224(SP)
	SPLAT(0x3e2aaaaa, Y1) // 1.6666665459e-1
	VMOVUPS Y1, 256(SP)
	SPLAT(0x3f000000, Y1) // 5.0000001201e-1
	VMOVUPS Y1, 288(SP)
	SPLAT(0x3f800000, Y1) // 1
	VMOVUPS Y1, 320(SP)
	SPLAT(127, Y1)        // the exponent's bias, an integer
	VMOVUPS Y1, 352(SP)

	MOVQ row+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS scale+16(FP), Y15
	SPLAT(0xff800000, Y14) // -Inf: the running maximum

	// Scale in place, keeping the maximum.
	MOVQ SI, DI
	MOVQ CX, DX

scale:
	VMULPS (DI), Y15, Y1
	VMOVUPS Y1, (DI)
	VMAXPS Y1, Y14, Y14
	ADDQ $32, DI
	SUBQ $8, DX
	JNZ  scale
	HMAX(Y14)

	// exp(x), x = v - max: n = round(x·log₂ e), r = x - n·ln 2 (in two
	// parts), exp(r) by a polynomial, times 2ⁿ made in the exponent bits.
	VXORPS Y15, Y15, Y15 // the sum
	MOVQ SI, DI
	MOVQ CX, DX

exp:
	VMOVUPS (DI), Y1
	VSUBPS Y14, Y1, Y1
	VMAXPS 0(SP), Y1, Y1
	VMULPS 32(SP), Y1, Y2
	VROUNDPS $0, Y2, Y2
	VFNMADD231PS 64(SP), Y2, Y1
	VFNMADD231PS 96(SP), Y2, Y1
	VMOVUPS 128(SP), Y0
	VFMADD213PS 160(SP), Y1, Y0
	VFMADD213PS 192(SP), Y1, Y0
	VFMADD213PS 224(SP), Y1, Y0
	VFMADD213PS 256(SP), Y1, Y0
	VFMADD213PS 288(SP), Y1, Y0
	VMULPS Y1, Y1, Y3
	VFMADD213PS Y1, Y3, Y0 // p·r² + r
	VADDPS 320(SP), Y0, Y0
	VCVTPS2DQ Y2, Y2
	VPADDD 352(SP), Y2, Y2
	VPSLLD $23, Y2, Y2
	VMULPS Y2, Y0, Y0
	VMOVUPS Y0, (DI)
	VADDPS Y0, Y15, Y15
	ADDQ $32, DI
	SUBQ $8, DX
	JNZ  exp
	HSUM(Y15)

	// Divide by the sum.
	VMOVUPS 320(SP), Y1
	VDIVPS Y15, Y1, Y1

norm:
	VMULPS (SI), Y1, Y2
	VMOVUPS Y2, (SI)
	ADDQ $32, SI
	SUBQ $8, CX
	JNZ  norm
	VZEROUPPER
	RET

// func layerNormAVX2(dst, x *float32, d int, gain, bias *float32, eps float32)
//
// dst[i] = (x[i] - mean)·rsqrt(variance + eps)·g[i] + b[i] for i < d, a
// positive multiple of 8, g the gain and b the bias.
TEXT ·layerNormAVX2(SB), NOSPLIT, $0-44
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ d+16(FP), CX
	MOVQ gain+24(FP), R8
	MOVQ bias+32(FP), R9
	CVTSQ2SS CX, X1
	VBROADCASTSS X1, Y13 // d
	SPLAT(0x3f800000, Y12) // 1

	VXORPS Y1, Y1, Y1
	XORQ DX, DX

sum:
	VADDPS (SI)(DX*4), Y1, Y1
	ADDQ $8, DX
	CMPQ DX, CX
	JB   sum
	HSUM(Y1)
	VDIVPS Y13, Y1, Y14 // mean

	VXORPS Y1, Y1, Y1
	XORQ DX, DX

variance:
	VMOVUPS (SI)(DX*4), Y2
	VSUBPS Y14, Y2, Y2
	VFMADD231PS Y2, Y2, Y1
	ADDQ $8, DX
	CMPQ DX, CX
	JB   variance
	HSUM(Y1)
	VDIVPS Y13, Y1, Y1
	VBROADCASTSS eps+40(FP), Y2
	VADDPS Y2, Y1, Y1
	VSQRTPS Y1, Y1
	VDIVPS Y1, Y12, Y15 // rsqrt

	XORQ DX, DX

scale:
	VMOVUPS (SI)(DX*4), Y2
	VSUBPS Y14, Y2, Y2
	VMULPS Y15, Y2, Y2
	VMULPS (R8)(DX*4), Y2, Y2
	VADDPS (R9)(DX*4), Y2, Y2
	VMOVUPS Y2, (DI)(DX*4)
	ADDQ $8, DX
	CMPQ DX, CX
	JB   scale
	VZEROUPPER
	RET

// func hasF16C() bool
TEXT ·hasF16C(SB), NOSPLIT, $0-1
	MOVL $1, AX
	XORL CX, CX
	CPUID
	SHRL $29, CX
	ANDL $1, CX
	MOVB CX, ret+0(FP)
	RET

// func rowStatsAVX2(row *float32, n int) (mx, ss float32)
//
// Returns the largest magnitude of row[0..n) (n a positive multiple of 16)
// and the sum of its squares, for the int16 path's scales.
TEXT ·rowStatsAVX2(SB), NOSPLIT, $0-24
	MOVQ row+0(FP), SI
	MOVQ n+8(FP), CX
	VPCMPEQD Y5, Y5, Y5
	VPSRLD $1, Y5, Y5 // 0x7fffffff: clears the sign
	VXORPS Y1, Y1, Y1 // largest magnitudes
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3 // sums of squares
	VXORPS Y4, Y4, Y4

stats:
	VMOVUPS (SI), Y6
	VMOVUPS 32(SI), Y7
	VFMADD231PS Y6, Y6, Y3
	VFMADD231PS Y7, Y7, Y4
	VANDPS Y5, Y6, Y6
	VANDPS Y5, Y7, Y7
	VMAXPS Y6, Y1, Y1
	VMAXPS Y7, Y2, Y2
	ADDQ $64, SI
	SUBQ $16, CX
	JNZ stats

	VMAXPS Y2, Y1, Y1
	VADDPS Y4, Y3, Y3
	HMAX(Y1)
	HSUM(Y3)
	VMOVSS X1, mx+16(FP)
	VMOVSS X3, ss+20(FP)
	VZEROUPPER
	RET

// func quantizeRowAVX2(q *int16, row *float32, n int, s float32)
//
// Sets q[i] to row[i]·s rounded to the nearest integer, ties to even (the
// rounding mode Go keeps), for i < n (a positive multiple of 16); the
// products must be within int16 (VPACKSSDW would saturate them).
TEXT ·quantizeRowAVX2(SB), NOSPLIT, $0-28
	MOVQ q+0(FP), DI
	MOVQ row+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS s+24(FP), Y5

quant:
	VMULPS (SI), Y5, Y1
	VMULPS 32(SI), Y5, Y2
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VPACKSSDW Y2, Y1, Y3 // lanes: row 0-3, 8-11, 4-7, 12-15
	VPERMQ $0xd8, Y3, Y3
	VMOVDQU Y3, (DI)
	ADDQ $64, SI
	ADDQ $32, DI
	SUBQ $16, CX
	JNZ quant

	VZEROUPPER
	RET
