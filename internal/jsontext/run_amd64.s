//go:build amd64 && !purego

#include "textflag.h"

// func runBlocks(s string, ascii bool) int
//
// The index of the first byte of s that stops a run (RunOf), looking only
// at whole 32-byte blocks; len(s) rounded down to 32 if none of them has
// one. Per block: a quote, a backslash, a byte at most 0x1f (unsigned
// min with 0x1f leaves it unchanged) and, with ascii, a byte's high bit.
TEXT ·runBlocks(SB), NOSPLIT, $0-32
	MOVQ    s_base+0(FP), SI
	MOVQ    s_len+8(FP), CX
	MOVBQZX ascii+16(FP), DX
	ANDQ    $~31, CX
	XORQ    AX, AX

	MOVQ         $0x22, BX
	MOVQ         BX, X1
	VPBROADCASTB X1, Y1 // '"'
	MOVQ         $0x5c, BX
	MOVQ         BX, X2
	VPBROADCASTB X2, Y2 // '\\'
	MOVQ         $0x1f, BX
	MOVQ         BX, X3
	VPBROADCASTB X3, Y3 // the last control byte
	NEGQ         DX
	ANDQ         $0x80, DX
	MOVQ         DX, X4
	VPBROADCASTB X4, Y4 // 0x80 with ascii, else 0

loop:
	CMPQ      AX, CX
	JAE       done
	VMOVDQU   (SI)(AX*1), Y0
	VPCMPEQB  Y1, Y0, Y5
	VPCMPEQB  Y2, Y0, Y6
	VPMINUB   Y3, Y0, Y7
	VPCMPEQB  Y7, Y0, Y7
	VPAND     Y4, Y0, Y8
	VPOR      Y5, Y6, Y5
	VPOR      Y7, Y8, Y7
	VPOR      Y5, Y7, Y5
	VPMOVMSKB Y5, BX
	TESTL     BX, BX
	JNZ       found
	ADDQ      $32, AX
	JMP       loop

found:
	BSFL BX, BX
	ADDQ BX, AX

done:
	VZEROUPPER
	MOVQ AX, ret+24(FP)
	RET
