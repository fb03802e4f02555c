//go:build !purego

#include "textflag.h"

// func blockDotsAVX2(blk *int16, offs *int32, vals *float32, n int, out *[64]float32)
// out[j] = Σ_k vals[k]·blk[offs[k]+j] for j < 64, n > 0: for each of the
// query's n non-zero dimensions, its 64 int16 codes (one column of the
// block) are widened to int32, converted to float32 and multiplied by the
// broadcast query value into eight accumulators of 8 slots.
TEXT ·blockDotsAVX2(SB), NOSPLIT, $0-40
	MOVQ blk+0(FP), SI
	MOVQ offs+8(FP), DI
	MOVQ vals+16(FP), DX
	MOVQ n+24(FP), CX
	MOVQ out+32(FP), R8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

loop:
	MOVL (DI), AX
	LEAQ (SI)(AX*2), BX
	VBROADCASTSS (DX), Y8
	VPMOVSXWD (BX), Y9
	VPMOVSXWD 16(BX), Y10
	VPMOVSXWD 32(BX), Y11
	VPMOVSXWD 48(BX), Y12
	VCVTDQ2PS Y9, Y9
	VCVTDQ2PS Y10, Y10
	VCVTDQ2PS Y11, Y11
	VCVTDQ2PS Y12, Y12
	VFMADD231PS Y9, Y8, Y0
	VFMADD231PS Y10, Y8, Y1
	VFMADD231PS Y11, Y8, Y2
	VFMADD231PS Y12, Y8, Y3
	VPMOVSXWD 64(BX), Y9
	VPMOVSXWD 80(BX), Y10
	VPMOVSXWD 96(BX), Y11
	VPMOVSXWD 112(BX), Y12
	VCVTDQ2PS Y9, Y9
	VCVTDQ2PS Y10, Y10
	VCVTDQ2PS Y11, Y11
	VCVTDQ2PS Y12, Y12
	VFMADD231PS Y9, Y8, Y4
	VFMADD231PS Y10, Y8, Y5
	VFMADD231PS Y11, Y8, Y6
	VFMADD231PS Y12, Y8, Y7
	ADDQ $4, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  loop

	VMOVUPS Y0, (R8)
	VMOVUPS Y1, 32(R8)
	VMOVUPS Y2, 64(R8)
	VMOVUPS Y3, 96(R8)
	VMOVUPS Y4, 128(R8)
	VMOVUPS Y5, 160(R8)
	VMOVUPS Y6, 192(R8)
	VMOVUPS Y7, 224(R8)
	VZEROUPPER
	RET
