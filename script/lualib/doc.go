// Package lualib provides, for gopher-lua (github.com/yuin/gopher-lua), the
// four extra libraries that Redis 7.0 preloads for scripts: cjson (lua-cjson
// 2.1.0 as bundled by Redis), cmsgpack (lua-cmsgpack 0.4.0), bit (LuaBitOp)
// and struct (Roberto Ierusalimschy's struct library). They are written from
// the libraries' documented and observed behaviour, on 64-bit Linux with
// glibc as Redis is built there; differential tests compare several hundred
// expressions and some thousand generated inputs with a real redis-server
// 7.0.
//
// Open registers all four as globals of one LState; OpenCJSON, OpenCmsgpack,
// OpenBit and OpenStruct register one each. All state (the cjson settings,
// cjson.null) belongs to the LState it was opened in: the package has no
// mutable package-level state, so separate LStates may run in separate
// goroutines. IsNull recognises cjson.null for a host converting results.
//
// # Compatible
//
//   - Output bytes: cjson.encode text (numbers as C's "%.14g" or the
//     configured precision, so integers have no ".0"; "/" escaped as "\/",
//     control bytes and DEL as \u00XX, an empty table as {}), cmsgpack.pack
//     bytes (the smallest integer format for integral numbers up to 64 bits,
//     float 32 when that holds the number exactly, infinities included, float
//     64 otherwise), struct.pack bytes, and bit results (32-bit two's
//     complement, with LuaBitOp's rounding of non-integral numbers).
//   - Decoding: cjson.decode's grammar with lua-cjson's extensions while
//     decode_invalid_numbers is on (everything glibc's strtod reads: hex,
//     inf, nan with payload, "+1", leading zeros), surrogate pairs in \u
//     escapes, the C-string view of the input (a NUL byte ends it; one in the
//     first two bytes is "JSON parser does not support UTF-16 or UTF-32"),
//     and the nesting limits: decode_max_depth/encode_max_depth (1000 by
//     default) and the 8000-slot C stack of Redis's Lua 5.1, which limits
//     deeper settings the same way. cmsgpack's formats and conversions (no
//     bin or ext types; uint 64 wraps to negative numbers; a nil or NaN map
//     key is "table index is nil"/"is NaN"), the values and offsets of
//     unpack, unpack_one and unpack_limit, and its limit of 7999 values at
//     once.
//   - Error texts, word for word, e.g. "Expected value but found invalid
//     token at character 1", "Cannot serialise table: excessively sparse
//     array", "Missing bytes in input.", "bad argument #1 to 'decode'
//     (expected 1 argument)". Like luaL_error, an error carries the
//     "chunk:line: " of the calling Lua code, and nothing when the caller is
//     not Lua (pcall(cjson.decode, s), or the host calling the function).
//   - The cjson settings functions and their return values, cjson.new,
//     _NAME and _VERSION fields, and the quirks of the C code: sparse-array
//     keys of 2^31 and more, which wrap a C int; x86's conversions of NaN and
//     out-of-range numbers; struct's integers wider than 8 bytes (zero bytes
//     beyond the eighth), its "string too short" error naming the argument
//     after the string, and "got nil" for the first missing pack argument.
//
// # Not compatible
//
//   - Key order. cjson.encode objects and cmsgpack.pack maps list keys in
//     gopher-lua's table order (array part, then the other keys in insertion
//     order), which is also the order pairs() shows, not in Lua 5.1's hash
//     order: {a = 1, b = 2, c = 3} encodes as {"a":1,"b":2,"c":3} here and
//     {"a":1,"c":3,"b":2} in Redis. Arrays and one-key objects encode
//     identically.
//   - cjson.null is a full userdata (gopher-lua has no light userdata): one
//     per LState, equal to every decoded null, type "userdata", but tostring
//     shows an address where Lua 5.1 shows "userdata: (nil)".
//   - The function name in "bad argument" errors is the call-site name that
//     gopher-lua reports, which matches Lua 5.1 for ordinary calls
//     (cjson.decode(x), a local alias, "?" from pcall), but a method call
//     (cjson:decode(x)) gets "bad argument #1 to 'decode'" where Lua 5.1
//     says "calling 'decode' on bad self".
//   - Stack size. Unpacking thousands of values needs gopher-lua's registry
//     to grow: with the default lua.Options (5120 slots, no growth) the
//     limit is "registry overflow" below Redis's 7999; set
//     lua.Options.RegistryMaxSize (16384 is plenty) to get Redis's limit.
//   - struct.pack reports a missing argument after 8 KiB of output as "no
//     value" where Lua's string buffer would have left a piece on the stack.
//   - Memory. A cmsgpack map with an integer key up to 2^26 makes gopher-lua
//     grow that table's array part up to the key (Lua 5.1 uses one hash
//     node), like t[k] = v in any gopher-lua script; hosts should bound
//     script input sizes and memory.
//   - Nothing is made read-only; Redis 7 protects the library tables, which
//     is the host's business.
package lualib
