package script

import (
	lua "github.com/yuin/gopher-lua"
)

// Folding the sandbox's constant globals into a compiled script.
//
// Every global a script can read is fixed once the sandbox is built, but
// for KEYS and ARGV, which each run sets: no script can assign a global
// (the proxy refuses it) or write into a library table (each is a
// read-only proxy too), and the server never changes either after
// newSandbox. So reading tonumber, redis or math gives the same value on
// every run, and so does reading a field of a library table through its
// proxy (redis.call, math.floor). fold rewrites those reads, right after
// compiling, into loads of a constant holding the value:
//
//   - GETGLOBAL A name, for a name the real globals hold other than KEYS
//     and ARGV, becomes LOADK A k with k the value;
//   - GETTABLEKS A B "field", right after an instruction that now loads a
//     read-only proxy into B and on no jump's target, becomes LOADK A k
//     with k the field of the proxy's table, when it is set.
//
// A global that is not set is left alone (reading it raises the sandbox's
// error at run time), and so is a field a library does not have. The
// rewritten script reads exactly what it read before; it saves the map
// lookups of each read (four for redis.call: the global, the empty proxy,
// its metatable's __index, the library table). Error messages do not
// change: gopher-lua names a called function from the call's debug
// information, recorded when compiling, not from the instruction that
// loaded it.
//
// It is applied before a script first runs, to protos no other goroutine
// sees (the engine's compile).
func (sb *sandbox) fold(p *lua.FunctionProto) {
	targets := jumpTargets(p.Code, p.FunctionPrototypes)
	// The instruction before loaded the proxy lastProxy into register
	// lastA (nil and -1 when it was no folded load of a proxy).
	lastA, lastProxy := -1, (*lua.LTable)(nil)
	for pc := 0; pc < len(p.Code); pc++ {
		if skip := pseudoWords(p.Code[pc], p.FunctionPrototypes); skip > 0 {
			pc += skip
			lastA, lastProxy = -1, nil
			continue
		}
		inst := p.Code[pc]
		loadedA, loadedProxy := -1, (*lua.LTable)(nil)
		// replace makes the instruction a load of v, the value it reads
		// (unless unset), noting a proxy it loads.
		replace := func(v lua.LValue) {
			if v == lua.LNil {
				return
			}
			p.Code[pc] = loadK(p, argA(inst), v)
			loadedA = argA(inst)
			if t, ok := v.(*lua.LTable); ok && sb.targets[t] != nil {
				loadedProxy = t
			}
		}
		switch opcode(inst) {
		case lua.OP_GETGLOBAL:
			if name, ok := p.Constants[argBx(inst)].(lua.LString); ok && name != "KEYS" && name != "ARGV" {
				replace(sb.real.RawGetString(string(name)))
			}
		case lua.OP_GETTABLEKS:
			if lastProxy == nil || targets[pc] || argB(inst) != lastA {
				break
			}
			c := argC(inst)
			if !isK(c) {
				break
			}
			if field, ok := p.Constants[indexK(c)].(lua.LString); ok {
				replace(sb.targets[lastProxy].RawGetString(string(field)))
			}
		}
		lastA, lastProxy = loadedA, loadedProxy
	}
	for _, sub := range p.FunctionPrototypes {
		sb.fold(sub)
	}
}

// loadK returns LOADK a k, with k a constant of p holding v (added to its
// constants when p has none that is v).
func loadK(p *lua.FunctionProto, a int, v lua.LValue) uint32 {
	k := -1
	for i, c := range p.Constants {
		if c == v {
			k = i
			break
		}
	}
	if k < 0 {
		k = len(p.Constants)
		p.Constants = append(p.Constants, v)
	}
	return uint32(lua.OP_LOADK)<<26 | uint32(a&0xff)<<18 | uint32(k&0x3ffff)
}

// jumpTargets marks every instruction some instruction may jump or skip
// to (over-approximated: a skip target is marked whether or not the
// instruction it follows is a jump).
func jumpTargets(code []uint32, protos []*lua.FunctionProto) []bool {
	t := make([]bool, len(code)+2)
	for pc := 0; pc < len(code); pc++ {
		inst := code[pc]
		switch opcode(inst) {
		case lua.OP_JMP, lua.OP_FORLOOP, lua.OP_FORPREP:
			if to := pc + 1 + argSBx(inst); to >= 0 && to < len(t) {
				t[to] = true
			}
		case lua.OP_EQ, lua.OP_LT, lua.OP_LE, lua.OP_TEST, lua.OP_TESTSET, lua.OP_LOADBOOL, lua.OP_TFORLOOP:
			t[pc+2] = true
		}
		pc += pseudoWords(inst, protos)
	}
	return t[:len(code)]
}

// pseudoWords is how many words after inst are not instructions but its
// operands: a CLOSURE's upvalue descriptions, a MOVEN's moves, the count
// of a SETLIST whose C is 0.
func pseudoWords(inst uint32, protos []*lua.FunctionProto) int {
	switch opcode(inst) {
	case lua.OP_CLOSURE:
		if bx := argBx(inst); bx < len(protos) {
			return int(protos[bx].NumUpvalues)
		}
	case lua.OP_MOVEN:
		return argC(inst)
	case lua.OP_SETLIST:
		if argC(inst) == 0 {
			return 1
		}
	}
	return 0
}

// gopher-lua's instruction layout: opcode in the top 6 bits, A in the
// next 8, then C (9 bits) and B (9 bits); Bx is the low 18 bits, sBx Bx
// biased by half its range. An RK operand names a constant when its top
// bit is set.
func opcode(inst uint32) int { return int(inst >> 26) }
func argA(inst uint32) int   { return int(inst>>18) & 0xff }
func argB(inst uint32) int   { return int(inst & 0x1ff) }
func argC(inst uint32) int   { return int(inst>>9) & 0x1ff }
func argBx(inst uint32) int  { return int(inst & 0x3ffff) }
func argSBx(inst uint32) int { return argBx(inst) - 0x3ffff>>1 }
func isK(rk int) bool        { return rk&0x100 != 0 }
func indexK(rk int) int      { return rk &^ 0x100 }
