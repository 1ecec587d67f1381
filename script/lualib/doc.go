// Package lualib provides, for gopher-lua (github.com/yuin/gopher-lua), the
// four extra libraries that Redis 7.0 preloads for scripts: cjson (lua-cjson
// 2.1.0 as bundled by Redis), cmsgpack (lua-cmsgpack 0.4.0), bit (LuaBitOp)
// and struct (Roberto Ierusalimschy's struct library). They are written from
// the libraries' documented and observed behaviour; a differential test
// compares them with a real redis-server 7.0.
//
// Open registers all four as globals of one LState; OpenCJSON, OpenCmsgpack,
// OpenBit and OpenStruct register one each. All state (the cjson settings,
// the cjson.null value) belongs to the LState it was opened in: the package
// has no mutable package-level state, so separate LStates may run in
// separate goroutines.
//
// # Compatible
//
//   - Output bytes: cjson.encode text (numbers with %.14g or the configured
//     precision, integers without ".0", "/" escaped as "\/", control bytes as
//     \u00XX, empty table as {}), cmsgpack.pack bytes (smallest integer
//     format, float 32 when the number is exactly a float 32, double
//     otherwise), struct.pack bytes, bit results (32-bit two's complement on
//     Lua numbers, with LuaBitOp's rounding of non-integers).
//   - Decoding: cjson.decode's grammar, including lua-cjson's extensions
//     (hexadecimal numbers, inf, nan, leading "+" and zeros while
//     decode_invalid_numbers is on), surrogate pairs in \u escapes, the
//     C-string view of the input (a NUL byte ends it), the nesting limits
//     (decode_max_depth, 1000 by default, and the Lua C stack limit of 8000
//     slots that Redis's Lua also has); cmsgpack's accepted formats, its
//     conversions (uint 64 wraps to a negative number), and its return values
//     of unpack, unpack_one and unpack_limit.
//   - Error texts, e.g. "Expected value but found invalid token at character
//     1", "Cannot serialise table: excessively sparse array", "Missing bytes
//     in input.", "bad argument #1 to 'decode' (expected 1 argument)". Errors
//     are raised as Lua errors carrying gopher-lua's "chunk:line:" prefix where
//     Lua 5.1's luaL_error would add one.
//   - The cjson settings functions, cjson.new, cjson._NAME and _VERSION, and
//     the cmsgpack and struct quirks Redis has (for example the argument
//     number in struct.pack's "string too short" error, integers wider than 8
//     bytes in struct, the offset -1 of unpack_one at the end of the input).
//
// # Not compatible
//
//   - Key order. cjson.encode objects and cmsgpack.pack maps list keys in
//     gopher-lua's table order (array part, then other keys in insertion
//     order), not in Lua 5.1's hash order, so a table with two or more
//     non-array keys may encode with its keys in another order than Redis.
//   - cjson.null is a full userdata (gopher-lua has no light userdata): it is
//     unique per LState, equal to itself, type() "userdata", but tostring
//     shows an address instead of Lua 5.1's "userdata: (nil)". IsNull tells
//     it apart.
//   - The function name in "bad argument" errors is gopher-lua's name of the
//     call site, which matches Lua 5.1 for the usual calls (cjson.decode(x),
//     a local alias) but not always (Lua 5.1 says "calling 'f' on bad self"
//     for method calls).
//   - Tables as big as gopher-lua's stack allows: unpacking more values than
//     the LState's registry holds fails with gopher-lua's "registry overflow"
//     instead of succeeding (Redis allows up to 7998 values at once); a host
//     that wants Redis's limit sets lua.Options.RegistryMaxSize accordingly.
//   - Memory: a cmsgpack map with a large integer key (up to 2^26) makes
//     gopher-lua allocate its table's array part up to that key, where Lua 5.1
//     would use a hash node. Hosts should bound script input sizes and
//     memory.
//   - Nothing is made read-only; Redis 7 protects the library tables, which is
//     the host's business.
package lualib
