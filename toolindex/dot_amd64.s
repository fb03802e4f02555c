//go:build !purego

#include "textflag.h"

// Every kernel keeps the 64 slots' sums in Y0-Y7 (eight slots each) and
// writes them to out (R8).
#define ZERO_SLOTS \
	VXORPS Y0, Y0, Y0; VXORPS Y1, Y1, Y1; VXORPS Y2, Y2, Y2; VXORPS Y3, Y3, Y3; \
	VXORPS Y4, Y4, Y4; VXORPS Y5, Y5, Y5; VXORPS Y6, Y6, Y6; VXORPS Y7, Y7, Y7

#define STORE_SLOTS \
	VMOVUPS Y0, (R8); VMOVUPS Y1, 32(R8); VMOVUPS Y2, 64(R8); VMOVUPS Y3, 96(R8); \
	VMOVUPS Y4, 128(R8); VMOVUPS Y5, 160(R8); VMOVUPS Y6, 192(R8); VMOVUPS Y7, 224(R8)

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
	ZERO_SLOTS

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

	STORE_SLOTS
	VZEROUPPER
	RET

// func blockDots8AVX2(blk *int8, offs *int32, vals *float32, n int, out *[64]float32)
// blockDotsAVX2 over int8 codes: each column is 64 bytes.
TEXT ·blockDots8AVX2(SB), NOSPLIT, $0-40
	MOVQ blk+0(FP), SI
	MOVQ offs+8(FP), DI
	MOVQ vals+16(FP), DX
	MOVQ n+24(FP), CX
	MOVQ out+32(FP), R8
	ZERO_SLOTS

loop:
	MOVL (DI), AX
	LEAQ (SI)(AX*1), BX
	VBROADCASTSS (DX), Y8
	VPMOVSXBD (BX), Y9
	VPMOVSXBD 8(BX), Y10
	VPMOVSXBD 16(BX), Y11
	VPMOVSXBD 24(BX), Y12
	VCVTDQ2PS Y9, Y9
	VCVTDQ2PS Y10, Y10
	VCVTDQ2PS Y11, Y11
	VCVTDQ2PS Y12, Y12
	VFMADD231PS Y9, Y8, Y0
	VFMADD231PS Y10, Y8, Y1
	VFMADD231PS Y11, Y8, Y2
	VFMADD231PS Y12, Y8, Y3
	VPMOVSXBD 32(BX), Y9
	VPMOVSXBD 40(BX), Y10
	VPMOVSXBD 48(BX), Y11
	VPMOVSXBD 56(BX), Y12
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

	STORE_SLOTS
	VZEROUPPER
	RET

// CHUNK adds the next eight slots of a sparse column (mask byte in R12,
// their packed codes at BX) into ACC: the codes are expanded by the
// shuffle of expandLUT (R14) for the mask byte, widened, converted and
// multiplied by the query value (Y8) with the fused multiply-add of
// blockDotsAVX2; BX moves past them and R12 to the next byte.
#define CHUNK(ACC) \
	MOVBQZX     R12, AX \
	SHRQ        $8, R12 \
	MOVQ        AX, R13 \
	SHLQ        $4, R13 \
	VMOVDQU     (BX), X9 \
	VPSHUFB     (R14)(R13*1), X9, X9 \
	VPMOVSXWD   X9, Y9 \
	VCVTDQ2PS   Y9, Y9 \
	VFMADD231PS Y9, Y8, ACC \
	POPCNTQ     AX, AX \
	LEAQ        (BX)(AX*2), BX

// func sparseDotsAVX2(mask *uint64, start *uint16, code *int16, offs *int32, vals *float32, n int, lut *[256][16]byte, out *[64]float32)
// blockDotsAVX2 over a sparse block: column d = offs[k]/64 is mask[d]
// (bit j: slot j has a code) and its codes from code[start[d]]; n > 0.
// Each column is read as eight chunks of eight slots (CHUNK), so every
// slot gets the same fused multiply-adds, in the same order, as in the
// dense kernel: a zero code's adds nothing.
TEXT ·sparseDotsAVX2(SB), NOSPLIT, $0-64
	MOVQ mask+0(FP), R9
	MOVQ start+8(FP), SI
	MOVQ code+16(FP), R10
	MOVQ offs+24(FP), DI
	MOVQ vals+32(FP), DX
	MOVQ n+40(FP), R11
	MOVQ lut+48(FP), R14
	MOVQ out+56(FP), R8
	ZERO_SLOTS

column:
	MOVL         (DI), AX
	SHRL         $6, AX
	MOVQ         (R9)(AX*8), R12
	MOVWQZX      (SI)(AX*2), CX
	LEAQ         (R10)(CX*2), BX
	VBROADCASTSS (DX), Y8
	CHUNK(Y0)
	CHUNK(Y1)
	CHUNK(Y2)
	CHUNK(Y3)
	CHUNK(Y4)
	CHUNK(Y5)
	CHUNK(Y6)
	CHUNK(Y7)
	ADDQ $4, DI
	ADDQ $4, DX
	DECQ R11
	JNZ  column

	STORE_SLOTS
	VZEROUPPER
	RET

// The AVX-512 kernels (where the processor has AVX-512 F, and VBMI2 for
// the sparse one) do what their AVX2 namesakes do, sixteen slots a
// register: the 64 slots' sums in Z0-Z3, every slot given the same fused
// multiply-adds in the same order, so the scores are the AVX2 kernels'
// bit for bit.
#define ZERO_SLOTS512 \
	VPXORD Z0, Z0, Z0; VPXORD Z1, Z1, Z1; VPXORD Z2, Z2, Z2; VPXORD Z3, Z3, Z3

#define STORE_SLOTS512 \
	VMOVUPS Z0, (R8); VMOVUPS Z1, 64(R8); VMOVUPS Z2, 128(R8); VMOVUPS Z3, 192(R8)

// func blockDotsAVX512(blk *int16, offs *int32, vals *float32, n int, out *[64]float32)
TEXT ·blockDotsAVX512(SB), NOSPLIT, $0-40
	MOVQ blk+0(FP), SI
	MOVQ offs+8(FP), DI
	MOVQ vals+16(FP), DX
	MOVQ n+24(FP), CX
	MOVQ out+32(FP), R8
	ZERO_SLOTS512

loop:
	MOVL         (DI), AX
	LEAQ         (SI)(AX*2), BX
	VBROADCASTSS (DX), Z8
	VPMOVSXWD    (BX), Z9
	VPMOVSXWD    32(BX), Z10
	VPMOVSXWD    64(BX), Z11
	VPMOVSXWD    96(BX), Z12
	VCVTDQ2PS    Z9, Z9
	VCVTDQ2PS    Z10, Z10
	VCVTDQ2PS    Z11, Z11
	VCVTDQ2PS    Z12, Z12
	VFMADD231PS  Z9, Z8, Z0
	VFMADD231PS  Z10, Z8, Z1
	VFMADD231PS  Z11, Z8, Z2
	VFMADD231PS  Z12, Z8, Z3
	ADDQ         $4, DI
	ADDQ         $4, DX
	DECQ         CX
	JNZ          loop

	STORE_SLOTS512
	VZEROUPPER
	RET

// func blockDots8AVX512(blk *int8, offs *int32, vals *float32, n int, out *[64]float32)
TEXT ·blockDots8AVX512(SB), NOSPLIT, $0-40
	MOVQ blk+0(FP), SI
	MOVQ offs+8(FP), DI
	MOVQ vals+16(FP), DX
	MOVQ n+24(FP), CX
	MOVQ out+32(FP), R8
	ZERO_SLOTS512

loop:
	MOVL         (DI), AX
	LEAQ         (SI)(AX*1), BX
	VBROADCASTSS (DX), Z8
	VPMOVSXBD    (BX), Z9
	VPMOVSXBD    16(BX), Z10
	VPMOVSXBD    32(BX), Z11
	VPMOVSXBD    48(BX), Z12
	VCVTDQ2PS    Z9, Z9
	VCVTDQ2PS    Z10, Z10
	VCVTDQ2PS    Z11, Z11
	VCVTDQ2PS    Z12, Z12
	VFMADD231PS  Z9, Z8, Z0
	VFMADD231PS  Z10, Z8, Z1
	VFMADD231PS  Z11, Z8, Z2
	VFMADD231PS  Z12, Z8, Z3
	ADDQ         $4, DI
	ADDQ         $4, DX
	DECQ         CX
	JNZ          loop

	STORE_SLOTS512
	VZEROUPPER
	RET

// CHUNK16 adds the next sixteen slots of a sparse column (mask bits in
// the low 16 of R12, their packed codes at BX) into ACC: sixteen codes are
// read (sparsePad covers the last chunk's) and VPEXPANDW puts the first
// of them at the places of the mask's set bits, zeros elsewhere (its
// register form: the memory form is several times slower on AMD's
// processors), then as CHUNK; BX moves past them and R12 to the next
// sixteen bits.
#define CHUNK16(ACC) \
	MOVWQZX       R12, AX \
	SHRQ          $16, R12 \
	KMOVW         AX, K1 \
	VMOVDQU       (BX), Y9 \
	VPEXPANDW.Z   Y9, K1, Y9 \
	VPMOVSXWD     Y9, Z9 \
	VCVTDQ2PS     Z9, Z9 \
	VFMADD231PS   Z9, Z8, ACC \
	POPCNTQ       AX, AX \
	LEAQ          (BX)(AX*2), BX

// func sparseDotsAVX512(mask *uint64, start *uint16, code *int16, offs *int32, vals *float32, n int, out *[64]float32)
TEXT ·sparseDotsAVX512(SB), NOSPLIT, $0-56
	MOVQ mask+0(FP), R9
	MOVQ start+8(FP), SI
	MOVQ code+16(FP), R10
	MOVQ offs+24(FP), DI
	MOVQ vals+32(FP), DX
	MOVQ n+40(FP), R11
	MOVQ out+48(FP), R8
	ZERO_SLOTS512

column:
	MOVL         (DI), AX
	SHRL         $6, AX
	MOVQ         (R9)(AX*8), R12
	MOVWQZX      (SI)(AX*2), CX
	LEAQ         (R10)(CX*2), BX
	VBROADCASTSS (DX), Z8
	CHUNK16(Z0)
	CHUNK16(Z1)
	CHUNK16(Z2)
	CHUNK16(Z3)
	ADDQ $4, DI
	ADDQ $4, DX
	DECQ R11
	JNZ  column

	STORE_SLOTS512
	VZEROUPPER
	RET
