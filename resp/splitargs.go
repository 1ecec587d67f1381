package resp

// splitArgs splits an inline request line into arguments the way Redis's
// sdssplitargs does: whitespace separates arguments; "double quotes" take
// the escapes \n \r \t \b \a \\ \" and \xHH; 'single quotes' take \'; a
// closing quote must be followed by whitespace or the end of the line.
// The argument bytes are written to arena, which is grown once up front so
// that the returned slices stay valid.
func SplitArgs(line []byte, args [][]byte, arena []byte) ([][]byte, []byte, error) {
	if cap(arena) < len(line) {
		arena = make([]byte, 0, len(line))
	}
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			return args, arena, nil
		}
		start := len(arena)
		var err error
		arena, i, err = splitOne(line, i, arena)
		if err != nil {
			return nil, arena, err
		}
		args = append(args, arena[start:len(arena):len(arena)])
	}
}

var errUnbalanced = &ProtocolError{"unbalanced quotes in request"}

// splitOne reads one argument starting at line[i] into arena.
func splitOne(line []byte, i int, arena []byte) ([]byte, int, error) {
	inDouble, inSingle := false, false
	for {
		if i == len(line) {
			if inDouble || inSingle {
				return arena, i, errUnbalanced
			}
			return arena, i, nil
		}
		c := line[i]
		switch {
		case inDouble:
			switch {
			case c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
				arena = append(arena, hexVal(line[i+2])<<4|hexVal(line[i+3]))
				i += 4
				continue
			case c == '\\' && i+1 < len(line):
				i++
				arena = append(arena, unescape(line[i]))
			case c == '"':
				if i+1 < len(line) && !isSpace(line[i+1]) {
					return arena, i, errUnbalanced
				}
				return arena, i + 1, nil
			default:
				arena = append(arena, c)
			}
		case inSingle:
			switch {
			case c == '\\' && i+1 < len(line) && line[i+1] == '\'':
				i++
				arena = append(arena, '\'')
			case c == '\'':
				if i+1 < len(line) && !isSpace(line[i+1]) {
					return arena, i, errUnbalanced
				}
				return arena, i + 1, nil
			default:
				arena = append(arena, c)
			}
		default:
			switch {
			case isSpace(c):
				return arena, i, nil
			case c == '"':
				inDouble = true
			case c == '\'':
				inSingle = true
			default:
				arena = append(arena, c)
			}
		}
		i++
	}
}

func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return c
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func hexVal(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
