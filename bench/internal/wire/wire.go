// Package wire holds the minimal RESP client code the load tools share:
// writing a command and reading replies off a buffered connection. It is
// for benchmark drivers only; it trusts the server to send well-formed
// RESP2.
package wire

import (
	"bufio"
	"errors"
	"fmt"
	"strconv"
)

// WriteCmd appends one command, as a RESP array of bulk strings, to w.
func WriteCmd(w *bufio.Writer, args ...string) {
	w.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		w.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
}

// ReadLine returns one reply line without its CRLF.
func ReadLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return "", fmt.Errorf("bad reply line %q", line)
	}
	return line[:len(line)-2], nil
}

// ReadReply reads one reply of any shape and fails on an error reply,
// at any depth.
func ReadReply(r *bufio.Reader) error {
	line, err := ReadLine(r)
	if err != nil {
		return err
	}
	switch line[0] {
	case '-':
		return errors.New("server replied " + line)
	case '+', ':':
		return nil
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n >= 0 {
			_, err = r.Discard(n + 2)
		}
		return err
	case '*':
		n, _ := strconv.Atoi(line[1:])
		for range max(n, 0) {
			if err := ReadReply(r); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unexpected reply %q", line)
}
