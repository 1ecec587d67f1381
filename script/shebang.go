package script

import (
	"strings"
)

// shebang is what a script's first line "#!lua [flags=a,b]" declares
// (Redis 7 scripts with flags). A script with a shebang is taken to write
// unless it says no-writes.
type shebang struct {
	present  bool
	noWrites bool
}

// shebangFlags are the flags Redis 7.0 accepts after "flags=".
var shebangFlags = map[string]bool{
	"no-writes": true, "allow-oom": true, "allow-stale": true, "no-cluster": true, "allow-cross-slot-keys": true,
}

// parseShebang reads the shebang of body, if any, and returns the body to
// compile: the shebang line blanked, so that line numbers stay the same.
func parseShebang(body []byte) (shebang, []byte, error) {
	if len(body) < 2 || body[0] != '#' || body[1] != '!' {
		return shebang{}, body, nil
	}
	nl := strings.IndexByte(string(body), '\n')
	if nl < 0 {
		return shebang{}, nil, &compileErr{"ERR Invalid script shebang"}
	}
	parts := strings.Fields(string(body[2:nl]))
	if len(parts) == 0 || parts[0] != "lua" {
		return shebang{}, nil, &compileErr{"ERR Unexpected engine in script shebang: " + strings.TrimRight(string(body[:nl]), "\r")}
	}
	sb := shebang{present: true}
	for _, opt := range parts[1:] {
		list, ok := strings.CutPrefix(opt, "flags=")
		if !ok {
			return shebang{}, nil, &compileErr{"ERR Unknown lua shebang option: " + opt}
		}
		for _, f := range strings.Split(list, ",") {
			switch {
			case f == "":
			case !shebangFlags[f]:
				return shebang{}, nil, &compileErr{"ERR Unexpected flag in script shebang: " + f}
			case f == "no-writes":
				sb.noWrites = true
			}
		}
	}
	return sb, body[nl:], nil
}
