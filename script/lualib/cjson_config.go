package lualib

import (
	"math"
	"strconv"

	lua "github.com/yuin/gopher-lua"
)

// The cjson settings functions. Each takes optional new values and returns
// the settings in force, as lua-cjson 2.1.0 does.

// configArgs checks that at most max arguments were given and pads the
// stack with nil up to max (lua-cjson's json_arg_init).
func configArgs(L *lua.LState, max int) *cjsonConfig {
	if L.GetTop() > max {
		argError(L, max+1, "found too many arguments")
	}
	for L.GetTop() < max {
		L.Push(lua.LNil)
	}
	return cjsonConf(L)
}

// intOption sets *setting from argument n when given, within [min, max],
// and pushes the setting. Like lua-cjson it keeps the low 32 bits of the
// integer and names argument 1 in range errors whatever n is.
func intOption(L *lua.LState, n int, setting *int32, min, max int32) {
	if L.Get(n) != lua.LNil {
		v := int32(checkInteger(L, n))
		if v < min || v > max {
			argError(L, 1, "expected integer between "+strconv.Itoa(int(min))+" and "+strconv.Itoa(int(max)))
		}
		*setting = v
	}
	L.Push(lua.LNumber(*setting))
}

// enumOption sets *setting from argument n when given: a boolean (true
// means 1) or one of options by name; it pushes the setting back as a
// boolean when it is 0 or 1, else as its name.
func enumOption(L *lua.LState, n int, setting *int, options []string) {
	if v := L.Get(n); v != lua.LNil {
		if b, ok := v.(lua.LBool); ok {
			*setting = 0
			if b {
				*setting = 1
			}
		} else {
			name := checkString(L, n)
			found := false
			for i, o := range options {
				if o == name {
					*setting, found = i, true
					break
				}
			}
			if !found {
				argError(L, n, "invalid option '"+name+"'")
			}
		}
	}
	if *setting <= 1 {
		L.Push(lua.LBool(*setting == 1))
	} else {
		L.Push(lua.LString(options[*setting]))
	}
}

var onOff = []string{"off", "on"}

// boolOption is enumOption for an on/off setting.
func boolOption(L *lua.LState, n int, setting *bool) {
	v := 0
	if *setting {
		v = 1
	}
	enumOption(L, n, &v, onOff)
	*setting = v == 1
}

func cjsonEncodeSparseArray(L *lua.LState) int {
	cfg := configArgs(L, 3)
	boolOption(L, 1, &cfg.sparseConvert)
	intOption(L, 2, &cfg.sparseRatio, 0, math.MaxInt32)
	intOption(L, 3, &cfg.sparseSafe, 0, math.MaxInt32)
	return 3
}

func cjsonEncodeMaxDepth(L *lua.LState) int {
	cfg := configArgs(L, 1)
	intOption(L, 1, &cfg.encodeMaxDepth, 1, math.MaxInt32)
	return 1
}

func cjsonDecodeMaxDepth(L *lua.LState) int {
	cfg := configArgs(L, 1)
	intOption(L, 1, &cfg.decodeMaxDepth, 1, math.MaxInt32)
	return 1
}

func cjsonEncodeNumberPrecision(L *lua.LState) int {
	cfg := configArgs(L, 1)
	intOption(L, 1, &cfg.numberPrecision, 1, 14)
	return 1
}

// cjsonEncodeKeepBuffer only records the setting: buffers are Go's here.
func cjsonEncodeKeepBuffer(L *lua.LState) int {
	cfg := configArgs(L, 1)
	boolOption(L, 1, &cfg.keepBuffer)
	return 1
}

func cjsonEncodeInvalidNumbers(L *lua.LState) int {
	cfg := configArgs(L, 1)
	enumOption(L, 1, &cfg.encodeInvalid, []string{"off", "on", "null"})
	return 1
}

func cjsonDecodeInvalidNumbers(L *lua.LState) int {
	cfg := configArgs(L, 1)
	boolOption(L, 1, &cfg.decodeInvalid)
	return 1
}
